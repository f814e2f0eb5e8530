import { describe, expect, it } from 'vitest';
import { enrichEventData, enrichSubmissionData } from '../../src/areas/submissions/enrich.js';

describe('enrichSubmissionData (SPEC Events, Emission)', () => {
  const variables = [
    { name: 'total', value: 7 },
    { name: 'risk', value: 'low' },
  ];
  const functions = [{ name: 'sum', expression: { '+': [1, 2] } }];

  it('indexes scoring.variables and scoring.functions by name and keeps the originals', () => {
    const data = {
      submission_id: 's1',
      questionnaire_id: 'q1',
      answers: { q1: 'yes', scoring: { variables, functions, version: 2 } },
    };
    expect(enrichSubmissionData(data)).toEqual({
      submission_id: 's1',
      questionnaire_id: 'q1',
      answers: {
        q1: 'yes',
        scoring: {
          variables,
          functions,
          version: 2,
          variables_by_name: { total: variables[0], risk: variables[1] },
          functions_by_name: { sum: functions[0] },
        },
      },
    });
  });

  it('does not mutate its input', () => {
    const data = { answers: { scoring: { variables, functions } } };
    const before = structuredClone(data);
    const enriched = enrichSubmissionData(data);
    expect(data).toEqual(before);
    expect(enriched).not.toBe(data);
    expect(enriched.answers).not.toBe(data.answers);
  });

  it('returns data without a scoring block unchanged', () => {
    for (const data of [
      { submission_id: 's1', answers: { q1: 'yes' } },
      { submission_id: 's1', answers: { scoring: null } },
      { submission_id: 's1', answers: { scoring: [1, 2] } },
      { submission_id: 's1', answers: 'not an object' },
      { submission_id: 's1' },
    ]) {
      expect(enrichSubmissionData(data)).toBe(data);
    }
  });

  it('gives empty indexes when scoring has no variables or functions', () => {
    expect(enrichSubmissionData({ answers: { scoring: {} } })).toEqual({
      answers: { scoring: { variables_by_name: {}, functions_by_name: {} } },
    });
  });

  it('accepts entries keyed in an object, skips entries without a string name, last duplicate wins', () => {
    const enriched = enrichSubmissionData({
      answers: {
        scoring: {
          variables: { a: { name: 'x', value: 1 }, b: { value: 2 }, c: { name: 'x', value: 3 }, d: 'oops' },
          functions: [{ name: 42 }, null, { name: '__proto__', body: 'kept as a key' }],
        },
      },
    });
    const scoring = enriched.answers.scoring as unknown as Record<string, Record<string, unknown>>;
    expect(scoring.variables_by_name).toEqual({ x: { name: 'x', value: 3 } });
    expect(Object.keys(scoring.functions_by_name)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(scoring.functions_by_name)).toBe(Object.prototype);
  });

  it('enrichEventData enriches the three submission events only, idempotently, and leaves non-objects', () => {
    const data = { answers: { scoring: { variables: [{ name: 't', value: 1 }] } } };
    for (const type of [
      'svc.submission.created',
      'svc.submission.anonymous_created',
      'svc.submission.updated',
    ]) {
      const once = enrichEventData(type, data);
      expect(once.answers.scoring).toHaveProperty('variables_by_name.t.value', 1);
      expect(enrichEventData(type, once)).toEqual(once);
    }
    expect(enrichEventData('svc.submission.deleted', data)).toBe(data);
    expect(enrichEventData('com.example.custom', data)).toBe(data);
    expect(enrichEventData('svc.submission.created', 'text')).toBe('text');
    expect(enrichEventData('svc.submission.created', undefined)).toBeUndefined();
  });
});
