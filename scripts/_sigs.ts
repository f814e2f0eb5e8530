import ts from 'typescript';

const program = ts.createProgram(['src/app/services.ts'], {
  strict: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
});
const checker = program.getTypeChecker();
const sf = program.getSourceFile('src/app/services.ts')!;
sf.forEachChild((n) => {
  if (ts.isInterfaceDeclaration(n) && n.name.text === 'Services') {
    for (const m of n.members) {
      if (!ts.isPropertySignature(m) || !m.type) continue;
      const t = checker.getTypeAtLocation(m.type);
      for (const p of t.getProperties()) {
        const pt = checker.getTypeOfSymbolAtLocation(p, m);
        for (const sig of pt.getCallSignatures()) {
          const params = sig
            .getParameters()
            .map(
              (x) =>
                x.name + ':' + checker.typeToString(checker.getTypeOfSymbolAtLocation(x, m)).slice(0, 30),
            );
          console.log(`${m.name.getText(sf)}.${p.name}(${params.join(', ')})`);
        }
      }
    }
  }
});
