import { describe, expect, it } from 'vitest';
import { ClaimGate } from '../../src/worker/claim-gate.js';
import { Wakeups } from '../../src/worker/wakeups.js';

describe('ClaimGate: when a job with work in memory asks the store', () => {
  it('asks on a wake, on known due work, after a full claim and once per poll interval; a nudge is not a reason', () => {
    const wakeups = new Wakeups();
    const gate = new ClaimGate(wakeups, 'job', 1_000);
    expect(gate.shouldAsk(0, false)).toBe(true); // the first step
    gate.claimed(3, 10);
    expect(gate.shouldAsk(10, false)).toBe(false);

    wakeups.nudge('job'); // work handed over in memory
    expect(gate.shouldAsk(20, false)).toBe(false);
    wakeups.wake('job'); // the store may hold due work
    expect(gate.shouldAsk(30, false)).toBe(true);
    expect(gate.shouldAsk(40, false)).toBe(false); // the wake was taken

    expect(gate.shouldAsk(50, true)).toBe(true); // the caller knows of due work
    gate.claimed(10, 10);
    expect(gate.more).toBe(true);
    expect(gate.shouldAsk(60, false)).toBe(true); // more is due after a full claim
    gate.claimed(0, 10);
    expect(gate.shouldAsk(70, false)).toBe(false);
    expect(gate.shouldAsk(1_059, false)).toBe(false);
    expect(gate.shouldAsk(1_060, false)).toBe(true); // a poll interval after the last ask
  });

  it('a wake forwarded to another thread is not noted here', () => {
    const wakeups = new Wakeups();
    const forwarded: string[] = [];
    wakeups.forward((name) => forwarded.push(name));
    wakeups.wake('job');
    expect(forwarded).toEqual(['job']);
    expect(wakeups.takeWoken('job')).toBe(false);
  });
});
