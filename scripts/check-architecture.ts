/**
 * The house rules a reviewer checks (docs/architecture.md "Rules a reviewer checks"), as a script run
 * by .ci/run: it prints every break and exits 1 on any.
 *
 * 1. An area never imports from src/app (the composition root imports areas, not the reverse).
 * 2. An area never imports another area's store, and never touches another area's tables in SQL (nor
 *    through the row helpers of src/db/audit.ts and sign-ins.ts, which take a table name).
 * 3. No cycle between areas (area A imports B, directly or not, while B imports A).
 * 4. No function longer than 300 lines; no file longer than 400 lines unless it says why in a line
 *    starting `// Long file:`.
 * 5. The console (console/src) reaches svc only through the public API: it imports nothing from
 *    src/ and no Node module; its files keep the same 400-line limit (the generated api/ excepted).
 *
 * Duplicated code is checked with the `duplicates` tool of the development machines (not in CI).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const MAX_FUNCTION_LINES = 300;
const MAX_FILE_LINES = 400;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

const rel = (path: string) => relative(ROOT, path);
const areaOf = (path: string): string | undefined => /src\/areas\/([^/]+)\//.exec(path)?.[1];

/** Every table name, by the area whose tables.ts declares it (`interface XTables { table: Row }`). */
function tableOwners(sources: Map<string, ts.SourceFile>): Map<string, string> {
  const owners = new Map<string, string>();
  for (const [path, sf] of sources) {
    if (!path.endsWith('/tables.ts')) continue;
    const area = areaOf(path);
    if (!area) continue;
    sf.forEachChild((node) => {
      if (ts.isInterfaceDeclaration(node) && /Tables$/.test(node.name.text)) {
        for (const member of node.members) {
          if (ts.isPropertySignature(member) && member.name) owners.set(member.name.getText(sf), area);
        }
      }
    });
  }
  return owners;
}

const problems: string[] = [];
const all = files(SRC);
const sources = new Map(
  all.map((path) => [
    path,
    ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true),
  ]),
);
const owners = tableOwners(sources);
const areaImports = new Map<string, Set<string>>();
const SQL_CALLS = new Set([
  'selectFrom',
  'insertInto',
  'updateTable',
  'deleteFrom',
  'with',
  'innerJoin',
  'leftJoin',
]);

for (const [path, sf] of sources) {
  const area = areaOf(path);
  const lines = sf.getLineAndCharacterOfPosition(sf.getEnd()).line + 1;
  if (lines > MAX_FILE_LINES && !/^\s*\/\/ Long file:/m.test(sf.text)) {
    problems.push(`${rel(path)}: ${lines} lines, over ${MAX_FILE_LINES} without a "// Long file:" reason`);
  }
  const visit = (node: ts.Node) => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      const spec = node.moduleSpecifier;
      if (spec && ts.isStringLiteral(spec) && spec.text.startsWith('.')) {
        const target = resolve(dirname(path), spec.text.replace(/\.js$/, '.ts'));
        const targetArea = areaOf(target);
        if (area && target.startsWith(join(SRC, 'app'))) {
          problems.push(`${rel(path)}: imports ${rel(target)} (areas never import from src/app)`);
        }
        if (area && targetArea && targetArea !== area) {
          if (!areaImports.has(area)) areaImports.set(area, new Set());
          areaImports.get(area)!.add(targetArea);
          if (/\/store\.ts$/.test(target) && !ts.isTypeOnlyImportOrExportDeclaration?.(node)) {
            problems.push(`${rel(path)}: imports ${targetArea}'s store (go through its service)`);
          }
        }
      }
    }
    // The shared row helpers (src/db/audit.ts, sign-ins.ts) take the table as their second argument.
    if (area && ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
      const table = node.arguments[1];
      const owner = table && ts.isStringLiteral(table) ? owners.get(table.text) : undefined;
      if (table && owner && owner !== area) {
        const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
        problems.push(
          `${rel(path)}:${line + 1}: ${node.expression.text}(…, '${(table as ts.StringLiteral).text}') touches ${owner}'s table`,
        );
      }
    }
    if (area && ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression)) {
      const method = node.expression.name.text;
      const [first] = node.arguments;
      if (SQL_CALLS.has(method) && first && ts.isStringLiteral(first)) {
        const table = first.text.split(' ')[0];
        const owner = owners.get(table);
        if (owner && owner !== area) {
          const { line } = sf.getLineAndCharacterOfPosition(node.getStart(sf));
          problems.push(`${rel(path)}:${line + 1}: ${method}('${table}') touches ${owner}'s table`);
        }
      }
    }
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (end - start + 1 > MAX_FUNCTION_LINES) {
        problems.push(
          `${rel(path)}:${start + 1}: a function of ${end - start + 1} lines (over ${MAX_FUNCTION_LINES})`,
        );
      }
    }
    node.forEachChild(visit);
  };
  visit(sf);
}

// The console: a browser program talking to the public API only.
const CONSOLE = join(ROOT, 'console', 'src');
const GENERATED = join(CONSOLE, 'api');
const consoleFiles = (function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : /\.tsx?$/.test(path) ? [path] : [];
  });
})(CONSOLE);
for (const path of consoleFiles) {
  const text = readFileSync(path, 'utf8');
  for (const [, spec] of text.matchAll(/(?:from|import)\s+['"]([^'"]+)['"]/g)) {
    const target = spec.startsWith('.') ? resolve(dirname(path), spec) : '';
    if (spec.startsWith('node:') || (target && !target.startsWith(CONSOLE))) {
      problems.push(`${rel(path)}: imports ${spec} (the console talks to svc through its public API only)`);
    }
  }
  const lines = text.split('\n').length;
  if (!path.startsWith(GENERATED) && lines > MAX_FILE_LINES && !/^\s*\/\/ Long file:/m.test(text)) {
    problems.push(`${rel(path)}: ${lines} lines, over ${MAX_FILE_LINES} without a "// Long file:" reason`);
  }
}

// Cycles between areas: a depth-first search over the area import graph.
const seen = new Set<string>();
const reported = new Set<string>();
const walk = (area: string, path: string[]) => {
  if (path.includes(area)) {
    const cycle = [...path.slice(path.indexOf(area)), area];
    const key = [...cycle].sort().join(',');
    if (!reported.has(key)) {
      reported.add(key);
      problems.push(`areas import each other in a cycle: ${cycle.join(' -> ')}`);
    }
    return;
  }
  if (seen.has(area) && path.length > 0) return;
  for (const next of areaImports.get(area) ?? []) walk(next, [...path, area]);
  seen.add(area);
};
for (const area of areaImports.keys()) walk(area, []);

if (problems.length > 0) {
  console.log(`${problems.length} break(s) of the house rules:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(
  `house rules hold: ${sources.size} files, ${owners.size} tables owned by their areas, no area cycles, ` +
    `${consoleFiles.length} console files on the public API only`,
);
