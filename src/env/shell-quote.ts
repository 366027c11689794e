/**
 * Shell quoting, one copy for every place that builds a command line for bash or sh: the
 * sandboxes' preludes, the persistent shell, the scaffold, the grader and the test commands.
 */

/** Single-quotes a word for sh/bash: `it's` → `'it'\''s'`. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", "'\\''")}'`;
}
