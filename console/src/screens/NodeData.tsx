import { Json } from '../ui/bits';

interface NodeOutcome {
  input: unknown;
  output: unknown;
  error: string | null;
  skip_reason: { message: string } | null;
}

/** What a node did, in a run or a test: its error or why it was skipped, its input and output. */
export function NodeData({ node }: { node: NodeOutcome }) {
  return (
    <>
      {node.error && <p class="error">{node.error}</p>}
      {node.skip_reason && <p class="muted">Skipped: {node.skip_reason.message}</p>}
      <h2>Input</h2>
      <Json value={node.input} label="node input" />
      <h2>Output</h2>
      <Json value={node.output} label="node output" />
    </>
  );
}
