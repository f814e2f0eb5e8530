import { AppError } from '../../http/errors.js';
import { FLOW_PARTS, type FlowControl } from '../workflows/flow-control.js';
import { compileError, expressionProblem } from '../workflows/jsonlogic.js';

/** The checks a subscription's expressions pass before it is saved. */

/** A condition (or any expression of a subscription) compiles, or 400 naming where it does not. */
export function checkCondition(condition: unknown, field: string): void {
  if (condition === null || condition === undefined) return;
  const err = compileError(condition, field);
  if (err) {
    const inner = expressionProblem(condition)?.path;
    throw new AppError('VALIDATION_ERROR', `${field} is not a valid JSONLogic expression: ${err}`, {
      field: inner ? `${field}.${inner}` : field,
    });
  }
}

/** Every expression of a flow control compiles (docs/workflows.md "Flow control"). */
export function checkFlowControl(flow: FlowControl | null | undefined, field: string): void {
  if (!flow) return;
  for (const part of FLOW_PARTS) {
    const key = flow[part]?.key;
    if (key !== undefined && key !== null) checkCondition(key, `${field}.${part}.key`);
  }
  if (typeof flow.priority === 'object') checkCondition(flow.priority, `${field}.priority`);
  const debounce = flow.debounce;
  if (debounce?.max_wait_ms !== undefined && debounce.max_wait_ms < debounce.period_ms)
    throw new AppError(
      'VALIDATION_ERROR',
      `${field}.debounce.max_wait_ms (${debounce.max_wait_ms}) must not be shorter than its period_ms (${debounce.period_ms})`,
      { field: `${field}.debounce.max_wait_ms` },
    );
}
