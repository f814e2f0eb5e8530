import { useState } from 'preact/hooks';
import { api, ok } from '../api/client';
import { href } from '../router';
import { ErrorNote, Panel, toInstant, toLocalField } from '../ui/bits';
import { useAction } from '../ui/use-action';

/**
 * Replay: new runs, on the current graph, for the events of the subscription's type published in a
 * time range (after fixing a graph, or for a subscription made after the events).
 */
export function ReplayPanel({ subscriptionId }: { subscriptionId: string }) {
  const [error, run] = useAction();
  const [from, setFrom] = useState(() => toLocalField(new Date(Date.now() - 3_600_000).toISOString()));
  // The fields hold whole minutes: `until` starts at the end of this one, so it covers events just sent.
  const [to, setTo] = useState(() => toLocalField(new Date(Date.now() + 60_000).toISOString()));
  const [result, setResult] = useState<{ runs: number; skipped: number; nextFrom: string | null } | null>(
    null,
  );
  const replay = (start: string) =>
    run(async () => {
      const answer = await ok(
        api.POST('/api/v1/event_subscription/{id}/replay', {
          params: { path: { id: subscriptionId } },
          body: { from: toInstant(start), to: toInstant(to) },
        }),
      );
      setResult({ runs: answer.run_ids.length, skipped: answer.skipped, nextFrom: answer.next_from });
      if (answer.next_from) setFrom(toLocalField(answer.next_from));
    });
  return (
    <Panel title="Replay events">
      <form
        class="row"
        aria-label="replay"
        onSubmit={(ev) => {
          ev.preventDefault();
          replay(from);
        }}
      >
        <label>
          Published from
          <input
            type="datetime-local"
            name="from"
            required
            value={from}
            onInput={(ev) => setFrom((ev.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <label>
          until
          <input
            type="datetime-local"
            name="to"
            required
            value={to}
            onInput={(ev) => setTo((ev.currentTarget as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">{result?.nextFrom ? 'Replay the next events' : 'Replay'}</button>
      </form>
      <ErrorNote error={error} />
      {result && (
        <p role="status">
          {result.runs} new run{result.runs === 1 ? '' : 's'}, {result.skipped} event
          {result.skipped === 1 ? '' : 's'} turned away by the filters or condition
          {result.nextFrom ? '; more events remain in the range.' : '.'}{' '}
          <a href={href(`/runs?event_subscription_id=${encodeURIComponent(subscriptionId)}`)}>
            Runs of this subscription
          </a>
        </p>
      )}
    </Panel>
  );
}
