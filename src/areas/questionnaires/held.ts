import type { Tx } from '../../db/store.js';
import { HOLD_FAILED_CODE, holdUnchanged, lockActiveQuestionnaires } from './questionnaire-store.js';
import type { Questionnaire } from './records.js';

/** How many questionnaires one process remembers for holds; the one read longest ago goes first. */
const REMEMBERED = 1_000;

/** A questionnaire held for another area's write; `remembered`: answered from this process's memory. */
export interface Held {
  /** undefined: no active questionnaire has that id. */
  questionnaire: Questionnaire | undefined;
  remembered: boolean;
}

/** The remembered questionnaire changed or went since it was read (found at once on SQLite). */
class HeldQuestionnaireChanged extends Error {
  constructor(id: string) {
    super(`questionnaire ${id} changed since this process read it`);
  }
}

/**
 * The questionnaire a submission answers, held inside its transaction (docs/platform.md,
 * Questionnaires "Endpoints" and Submissions "Checks hold at commit"; docs/performance.md "What makes
 * it fast"). A change made in this process is not forgotten here: like any other
 * process's, it is found by the check, and costs one transaction run again.
 *
 * Reading it costs PostgreSQL a round trip of its own before the inserts, the request's second one.
 * So the row, once read, is remembered here by id, and later holds send only a check with the
 * commit: "this row is still at that revision, not deleted, and held FOR SHARE until the commit".
 * Every change of a questionnaire (status, content, config, folder, deletion) takes the next
 * `revision_sequence` (changes.ts), so an equal sequence means an equal row, in this process or any
 * other. If the check fails, the transaction fails with it and nothing it wrote is kept; the caller
 * then runs it again with `fresh`, which reads the row as it is now (and remembers that).
 */
export function createHeldQuestionnaires() {
  const memory = new Map<string, Questionnaire>();

  const remember = (id: string, q: Questionnaire | undefined) => {
    memory.delete(id);
    if (!q) return;
    memory.set(id, q);
    if (memory.size > REMEMBERED) memory.delete(memory.keys().next().value as string);
  };

  return {
    async holdActive(tx: Tx, id: string, { fresh }: { fresh: boolean }): Promise<Held> {
      const known = fresh ? undefined : memory.get(id);
      if (known) {
        if (!(await holdUnchanged(tx, id, known.revision_sequence))) throw new HeldQuestionnaireChanged(id);
        return { questionnaire: known, remembered: true };
      }
      const [q] = await lockActiveQuestionnaires(tx, [id]);
      remember(id, q);
      return { questionnaire: q, remembered: false };
    },

    /** Whether a transaction failed because a remembered questionnaire it held had changed. */
    changedWhileHeld(err: unknown): boolean {
      return (
        err instanceof HeldQuestionnaireChanged || (err as { code?: unknown })?.code === HOLD_FAILED_CODE
      );
    },
  };
}
