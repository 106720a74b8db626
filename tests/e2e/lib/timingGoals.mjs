/**
 * Timing goals measured in the editor (tests/timing_goals.py describes them): a test asserts
 * an order of magnitude and records the measurement beside its goal for bench/timing_goals.py.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ARTIFACTS } from './paths.mjs';

export const GOALS_FILE = join(ARTIFACTS, '..', 'timing-goals.jsonl');

/** Keeps one measurement of `goal` (`ms`) beside its target. */
export function recordGoal(goal, ms, targetMs) {
  mkdirSync(dirname(GOALS_FILE), { recursive: true });
  appendFileSync(GOALS_FILE, `${JSON.stringify({ goal, seconds: ms / 1000, target_s: targetMs / 1000 })}\n`);
}
