// A bounded in-memory job queue that hands failed jobs back with a delay.
import { RetryPolicy } from "./retry";

export interface Job {
  id: string;
  payload: unknown;
  attempts: number;
}

export enum QueueState {
  Open,
  Draining,
  Closed,
}

export class JobQueue {
  private jobs: Job[] = [];
  state: QueueState = QueueState.Open;

  constructor(private capacity: number, private policy: RetryPolicy) {}

  push(job: Job): boolean {
    if (this.state !== QueueState.Open || this.jobs.length >= this.capacity) {
      return false;
    }
    this.jobs.push(job);
    return true;
  }

  pop(): Job | undefined {
    return this.jobs.shift();
  }

  requeue(job: Job): number {
    job.attempts += 1;
    this.jobs.push(job);
    return this.policy.nextDelay(job.attempts);
  }
}
