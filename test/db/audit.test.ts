import { describe, expect, it } from 'vitest';
import { auditInsert, auditUpdate, softDeleted } from '../../src/db/audit.js';

// Each helper is spread into rows of several tables: a column added here must exist in all of them.
describe('audit column helpers write exactly their columns', () => {
  const at = '2026-01-02T03:04:05.678Z';

  it('auditInsert: created and changed now, by the actor, not deleted', () => {
    expect(auditInsert(at, 'u1')).toStrictEqual({
      created_at: at,
      updated_at: at,
      updated_by: 'u1',
      deleted_at: null,
    });
    expect(auditInsert(at, null).updated_by).toBeNull();
  });

  it('auditUpdate: when and by whom', () => {
    expect(auditUpdate(at, 'u1')).toStrictEqual({ updated_at: at, updated_by: 'u1' });
  });

  it('softDeleted: marks the row deleted and counts as a change', () => {
    expect(softDeleted(at, 'u1')).toStrictEqual({ deleted_at: at, updated_at: at, updated_by: 'u1' });
  });
});
