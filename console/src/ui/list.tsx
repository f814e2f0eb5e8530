import type { ComponentChildren } from 'preact';

export interface Page {
  total: number;
  limit: number;
  offset: number;
  has_next: boolean;
  has_previous: boolean;
}

/** Previous / next over a list envelope (CONTRACTS §2). */
export function Pager({ page, onOffset }: { page: Page | undefined; onOffset: (offset: number) => void }) {
  if (!page) return null;
  const last = Math.min(page.offset + page.limit, page.total);
  return (
    <div class="row" style={{ justifyContent: 'flex-end', marginTop: '0.5rem' }}>
      <span class="muted">{page.total === 0 ? 'none' : `${page.offset + 1}–${last} of ${page.total}`}</span>
      <button
        type="button"
        disabled={!page.has_previous}
        onClick={() => onOffset(Math.max(page.offset - page.limit, 0))}
      >
        Previous
      </button>
      <button type="button" disabled={!page.has_next} onClick={() => onOffset(page.offset + page.limit)}>
        Next
      </button>
    </div>
  );
}

export function Table({
  head,
  children,
  label,
}: {
  head: string[];
  children: ComponentChildren;
  label: string;
}) {
  return (
    <div class="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {head.map((h) => (
              <th key={h} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}
