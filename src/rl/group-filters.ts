/**
 * DAPO's dynamic sampling: which groups of a batch count as kept (they carry a gradient), the
 * target an iteration's refill rounds fill up to.
 */
import type { PolicyBatch } from './samples.js';

/**
 * Groups of a batch that count toward DAPO's refill target: those left after the flat groups
 * and, with `filterOverlong`, the groups the filter emptied (policySamples' `emptiedGroups`) are
 * taken out. An emptied group is no kept one: without it, the refill stopped short.
 */
export function keptGroups(batch: Pick<PolicyBatch, 'groups' | 'droppedGroups' | 'emptiedGroups'>): number {
  return batch.groups - batch.droppedGroups - batch.emptiedGroups;
}
