import ts from 'typescript';
const files = process.argv.slice(2);
const program = ts.createProgram(files, { strict: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022 });
const checker = program.getTypeChecker();
const flags = ts.TypeFormatFlags.NoTruncation | ts.TypeFormatFlags.UseAliasDefinedOutsideCurrentScope | ts.TypeFormatFlags.WriteArrowStyleSignature;
for (const f of files) {
  const sf = program.getSourceFile(f)!;
  sf.forEachChild((n) => {
    if (ts.isTypeAliasDeclaration(n) && /ReturnType<typeof/.test(n.type.getText(sf))) {
      const t = checker.getTypeAtLocation(n.type);
      console.log(`// ${f}: ${n.name.text}`);
      console.log(`export interface ${n.name.text} {`);
      for (const p of t.getProperties()) {
        const pt = checker.getTypeOfSymbolAtLocation(p, n);
        const sigs = pt.getCallSignatures();
        if (sigs.length === 1) {
          const s = checker.signatureToString(sigs[0], n, flags & ~ts.TypeFormatFlags.WriteArrowStyleSignature);
          console.log(`  ${p.name}${s};`);
        } else {
          console.log(`  ${p.name}: ${checker.typeToString(pt, n, flags)};`);
        }
      }
      console.log('}');
    }
  });
}
