// Retry policy with exponential backoff for queue consumers.
import { readFileSync } from 'fs';

export function backoffDelay(attempt, baseMs = 100, maxMs = 30000) {
  const delay = baseMs * 2 ** attempt;
  return Math.min(delay, maxMs);
}

export class RetryPolicy {
  constructor(maxAttempts, baseMs) {
    this.maxAttempts = maxAttempts;
    this.baseMs = baseMs;
  }

  shouldRetry(attempt, error) {
    return attempt < this.maxAttempts && !error.fatal;
  }

  nextDelay(attempt) {
    return backoffDelay(attempt, this.baseMs);
  }
}

export const loadPolicy = (path) => {
  const raw = JSON.parse(readFileSync(path, 'utf8'));
  return new RetryPolicy(raw.maxAttempts ?? 5, raw.baseMs ?? 100);
};
