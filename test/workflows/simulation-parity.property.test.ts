import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CloudEvent } from '../../src/areas/events/cloudevent.js';
import { newId } from '../../src/lib/ids.js';
import type { TestApp } from '../helpers/app.js';
import { dialectName } from '../helpers/store.js';
import { type Api, type Json, nodesOf, runsOf, settle, startWorkflowApp, workflow } from './helpers.js';

/**
 * Simulation parity (docs/workflows.md "Simulation"): for random submission events and random graphs
 * of COMPUTE, SWITCH and JOIN nodes, POST /event_subscription/{id}/test on the event as a user would
 * paste it (raw answers, no `variables_by_name`) gives the node statuses, outputs and errors of the
 * real run of the published event. Expressions read the enrichment, earlier outputs and the envelope,
 * and some fail (NaN), so the paths taken differ from sample to sample.
 */
describe(`simulation and a real run agree (${dialectName})`, () => {
  let t: TestApp;
  let a: Api;

  beforeAll(async () => {
    ({ t, a } = await startWorkflowApp());
  });
  afterAll(() => t.close());

  const TOTAL = 'event.data.answers.scoring.variables_by_name.total.value';
  const BONUS = 'event.data.answers.scoring.variables_by_name.bonus.value';

  /** COMPUTE logic i over earlier node `prev` (or the event alone when there is none). */
  function logic(choice: number, prev: string | null): unknown {
    const earlier = prev ? { var: `nodes.${prev}.output.result` } : 0;
    switch (choice) {
      case 0:
        return { var: TOTAL };
      case 1:
        return { '+': [{ var: TOTAL }, { var: BONUS }, earlier] };
      case 2:
        return { if: [{ '>': [{ var: TOTAL }, 5] }, 'high', 'low'] };
      case 3:
        // Fails: the answer q1 is a word, not a number.
        return { '/': [1, { var: 'event.data.answers.q1' }] };
      case 4:
        return { cat: [{ var: 'event.subject' }, '/', { var: 'event.data.answers.q1' }] };
      default:
        return { eachKey: { total: { var: TOTAL }, earlier } };
    }
  }

  function condition(choice: number, threshold: number, from: string): unknown {
    switch (choice) {
      case 0:
        return undefined;
      case 1:
        return { '>': [{ var: TOTAL }, threshold] };
      case 2:
        return { '!!': [{ var: `nodes.${from}.output` }] };
      default:
        return { '==': [{ var: 'event.data.answers.scoring.variables_by_name.total.name' }, 'total'] };
    }
  }

  const arb = fc.integer({ min: 2, max: 7 }).chain((n) =>
    fc.record({
      kinds: fc.array(fc.constantFrom('COMPUTE', 'COMPUTE', 'SWITCH', 'JOIN'), {
        minLength: n,
        maxLength: n,
      }),
      logic: fc.array(fc.nat(5), { minLength: n, maxLength: n }),
      continueOnError: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      joinMode: fc.array(fc.constantFrom('ALL', 'ANY', 'N_OF_M'), { minLength: n, maxLength: n }),
      edges: fc.array(
        fc.record({
          a: fc.nat(n - 1),
          b: fc.nat(n - 1),
          cond: fc.nat(3),
          threshold: fc.integer({ min: 0, max: 12 }),
        }),
        { maxLength: n * 2 },
      ),
      total: fc.integer({ min: 0, max: 12 }),
      bonus: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constant('x')),
      word: fc.constantFrom('yes', 'no', 'maybe'),
    }),
  );

  it('gives the same node statuses, outputs and errors as the real run', async () => {
    await fc.assert(
      fc.asyncProperty(arb, async (g) => {
        // Edges go from lower to higher index: acyclic by construction; no duplicate pairs.
        const seen = new Set<string>();
        const edges = g.edges
          .filter((e) => e.a !== e.b)
          .map((e) => ({ ...e, x: Math.min(e.a, e.b), y: Math.max(e.a, e.b) }))
          .filter((e) => !seen.has(`${e.x}-${e.y}`) && seen.add(`${e.x}-${e.y}`))
          .map((e) => {
            const cond = condition(e.cond, e.threshold, `n${e.x}`);
            return {
              from_node_id: `n${e.x}`,
              to_node_id: `n${e.y}`,
              ...(cond ? { condition_jsonlogic: cond } : {}),
            };
          });
        const nodes = g.kinds.map((kind, i) => {
          const key = `n${i}`;
          const base = { key, continue_on_error: g.continueOnError[i] };
          const preds = edges.filter((e) => e.to_node_id === key).length;
          if (kind === 'JOIN' && preds > 0) {
            const mode = g.joinMode[i];
            return {
              ...base,
              type: 'JOIN',
              config: mode === 'N_OF_M' ? { mode, n_required: Math.max(1, preds - 1) } : { mode },
            };
          }
          if (kind === 'SWITCH') return { ...base, type: 'SWITCH' };
          const prev = edges.find((e) => e.to_node_id === key)?.from_node_id ?? null;
          return { ...base, type: 'COMPUTE', config: { logic: logic(g.logic[i], prev) } };
        });

        const submissionId = newId();
        const wf = await workflow(
          a,
          { nodes, edges },
          { event_type: 'svc.submission.created', subject_filter: submissionId },
        );
        const data = {
          submission_id: submissionId,
          questionnaire_id: newId(),
          answers: {
            q1: g.word,
            scoring: {
              variables: [
                { name: 'total', value: g.total },
                { name: 'bonus', value: g.bonus },
              ],
              functions: [],
            },
          },
        };
        await t.ctx.store.transaction((tx) =>
          t.ctx.services.events.publish(tx, {
            type: 'svc.submission.created',
            source: '/api/v1/questionnaire_submission',
            subject: submissionId,
            data,
          }),
        );
        await settle(t);
        const [run] = await runsOf(a, wf.id);
        const real = await nodesOf(a, run.id);
        // The event as published, less the enrichment: what a user would paste from elsewhere.
        const published = run.trigger_event as CloudEvent;
        expect(published.data).not.toEqual(data);
        const pasted = { ...published, data };
        const sim = await a.call('POST', `/event_subscription/${wf.id}/test`, { event: pasted });
        expect(sim.status).toBe(200);
        expect(sim.body.status).toBe(run.status);
        expect(sim.body.error).toBe(run.error);
        for (const n of sim.body.nodes as Json[]) {
          const r = real[n.key];
          expect({ key: n.key, status: n.status, output: n.output, error: n.error }).toEqual({
            key: r.node_key,
            status: r.status,
            output: r.output,
            error: r.error,
          });
        }
      }),
      { numRuns: 30 },
    );
  }, 120_000);
});
