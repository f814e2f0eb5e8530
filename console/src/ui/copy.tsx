import { useState } from 'preact/hooks';

/**
 * A value shown once (a new webhook secret, an API key's token) with a copy button. It lives only in
 * this component's state: leaving the screen drops it, and the API never answers it again.
 */
export function ShownOnce({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <section class="once" aria-label={label}>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <strong>{label}</strong>
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(value).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {copied ? 'Copied' : 'Copy'}
        </button>
      </div>
      <code class="secret-value" style={{ wordBreak: 'break-all' }}>
        {value}
      </code>
      <p class="muted">Shown this once: svc keeps only a hash or the encrypted value.</p>
    </section>
  );
}
