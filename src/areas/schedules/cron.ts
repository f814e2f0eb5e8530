import { Cron } from 'croner';
import { AppError } from '../../http/errors.js';

/**
 * Cron expressions through croner (docs/schedules.md "Cron"): 5 fields (minute hour day-of-month
 * month day-of-week) or 6 (seconds first), ranges, steps, lists, names (`MON`, `JAN`), `L`, `#`, and
 * the nicknames `@yearly @monthly @weekly @daily @hourly`; read in an IANA time zone. A local time
 * that does not exist (the hour a DST change skips) fires at the first instant after the gap; one
 * that happens twice (the hour repeated) fires once, the first time.
 */
export function cronOf(expression: string, timezone: string, field = 'cron'): Cron {
  if (!expression.startsWith('@')) {
    const fields = expression.trim().split(/\s+/).length;
    if (fields !== 5 && fields !== 6) {
      throw invalid(
        field,
        `has ${fields} fields; write 5 (minute hour day month weekday) or 6 (seconds first)`,
      );
    }
  }
  checkTimezone(timezone);
  let cron: Cron;
  try {
    cron = new Cron(expression, { timezone, paused: true });
  } catch (err) {
    throw invalid(field, (err as Error).message.replace(/^CronPattern: /, ''));
  }
  return cron;
}

/** The next `n` fire times strictly after `after`; fewer when the expression runs out. */
export function nextFireTimes(cron: Cron, after: Date, n: number): Date[] {
  return cron.nextRuns(n, after);
}

/** Fire times in (`from`, `to`], oldest first, at most `limit` (the latest ones when there are more). */
export function fireTimesBetween(cron: Cron, from: Date, to: Date, limit: number): Date[] {
  const latest = cron.previousRuns(limit, new Date(to.getTime() + 1));
  return latest.filter((d) => d.getTime() > from.getTime()).reverse();
}

function checkTimezone(timezone: string): void {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    throw invalid(
      'timezone',
      `"${timezone}" is not an IANA time zone (e.g. UTC, Europe/Berlin, America/New_York)`,
    );
  }
}

const invalid = (field: string, why: string) =>
  new AppError('VALIDATION_ERROR', `${field} ${why}`, { field });
