import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../console/src/', import.meta.url));

/**
 * Preact sets a field's `value` (and `checked`) to the prop's at every render of its component: on
 * a field without an input handler, any re-render (a list arriving, a poll) wipes what the user
 * typed, and the form is sent with the initial text instead. That made the console's tests fail one
 * run in a few (a schedule's data, an event type's examples) and would lose a real user's input.
 * A field read with FormData takes its first text from `defaultValue` / `defaultChecked`.
 */
function uncontrolledWithValue(name: string, text: string): string[] {
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TSX);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isJsxSelfClosingElement(node) || ts.isJsxOpeningElement(node)) {
      const tag = node.tagName.getText();
      if (tag === 'input' || tag === 'textarea' || tag === 'select') {
        const props = new Map<string, string>();
        for (const p of node.attributes.properties)
          if (ts.isJsxAttribute(p)) props.set(p.name.getText(), p.initializer?.getText() ?? 'true');
        const handled = props.has('onInput') || props.has('onChange');
        // A checkbox's or radio's `value` is what it submits, not its state.
        const type = props.get('type')?.replace(/["']/g, '');
        const valueIsState = type !== 'checkbox' && type !== 'radio';
        const { line } = source.getLineAndCharacterOfPosition(node.getStart());
        const where = `${name}:${line + 1} <${tag}>`;
        if (!handled && valueIsState && props.has('value')) found.push(`${where} value`);
        if (!handled && props.has('checked')) found.push(`${where} checked`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function tsxFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsxFiles(join(dir, e.name)) : e.name.endsWith('.tsx') ? [join(dir, e.name)] : [],
  );
}

describe("the console's form fields", () => {
  it('never bind value or checked without an input handler (a re-render would wipe what was typed)', () => {
    const files = tsxFiles(SRC);
    expect(files.length).toBeGreaterThan(10);
    expect(files.flatMap((f) => uncontrolledWithValue(relative(SRC, f), readFileSync(f, 'utf8')))).toEqual(
      [],
    );
  });

  it('the check names such fields, and passes handled and default ones', () => {
    const probe = [
      '<form>',
      '<textarea name="a" value="[]" />',
      '<input type="checkbox" name="b" checked />',
      '<select name="c" value={x}><option value="1">1</option></select>',
      '<input name="d" value={v} onInput={set} />',
      '<input type="checkbox" name="e" value="read" />',
      '<textarea name="f" defaultValue="{}" />',
      '</form>',
    ].join('\n');
    expect(uncontrolledWithValue('probe.tsx', probe)).toEqual([
      'probe.tsx:2 <textarea> value',
      'probe.tsx:3 <input> checked',
      'probe.tsx:4 <select> value',
    ]);
  });
});
