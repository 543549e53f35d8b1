/**
 * A unified diff of two texts, line by line, for the debug log of each reload (ingress-nginx logs the diff of
 * nginx.conf at --v=2). Common leading and trailing lines are cut first, so the usual change (a few lines somewhere
 * in a large config) costs time linear in the text; what is left is diffed with Myers' O(ND) algorithm up to
 * MAX_EDITS edits, beyond which the middle counts as replaced whole. The output is capped.
 */

/** DiffOptions bound the work and the output. */
export interface DiffOptions {
  /** lines of context around each change (3) */
  readonly context?: number;
  /** most lines printed; the rest are counted in a last line (400) */
  readonly maxLines?: number;
  /** most edits searched for before the changed middle counts as replaced whole (2,000) */
  readonly maxEdits?: number;
}

type Op = { readonly kind: ' ' | '-' | '+'; readonly line: string; readonly a: number; readonly b: number };

/** myers gives the edit script of a → b, or null when it needs more than maxEdits edits. */
function myers(a: readonly string[], b: readonly string[], maxEdits: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    const next = v.slice();
    for (let k = -d; k <= d; k += 2) {
      let x =
        k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      next[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, [...trace, next], offset);
    }
    v = next;
  }
  return null;
}

/** backtrack walks Myers' trace back from the end into the edit script. */
function backtrack(a: readonly string[], b: readonly string[], trace: Int32Array[], offset: number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 2; d >= 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const down = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!);
    const prevK = down ? k + 1 : k - 1;
    const prevX = v[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      ops.push({ kind: ' ', line: a[x]!, a: x, b: y });
    }
    if (d === 0) break;
    if (down) {
      y--;
      ops.push({ kind: '+', line: b[y]!, a: x, b: y });
    } else {
      x--;
      ops.push({ kind: '-', line: a[x]!, a: x, b: y });
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    ops.push({ kind: ' ', line: a[x]!, a: x, b: y });
  }
  return ops.reverse();
}

const splitLines = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));

/**
 * unifiedDiff prints `before` → `after` as a unified diff (`@@ -a,n +b,m @@` hunks, no file header), or '' when
 * they are equal. Longer than `maxLines`, it ends with `… N more lines`.
 */
export function unifiedDiff(before: string, after: string, options: DiffOptions = {}): string {
  if (before === after) return '';
  const context = options.context ?? 3;
  const maxLines = options.maxLines ?? 400;
  const a = splitLines(before);
  const b = splitLines(after);
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const midA = a.slice(start, endA);
  const midB = b.slice(start, endB);
  const script = myers(midA, midB, options.maxEdits ?? 2000) ?? [
    ...midA.map((line, i) => ({ kind: '-' as const, line, a: i, b: 0 })),
    ...midB.map((line, i) => ({ kind: '+' as const, line, a: midA.length, b: i })),
  ];
  // The whole script with the common lines around it, in both texts' line numbers.
  const ops: Op[] = [];
  for (let i = Math.max(0, start - context); i < start; i++) ops.push({ kind: ' ', line: a[i]!, a: i, b: i });
  for (const op of script) ops.push({ kind: op.kind, line: op.line, a: op.a + start, b: op.b + start });
  const tail = Math.min(a.length - endA, context);
  for (let i = 0; i < tail; i++) ops.push({ kind: ' ', line: a[endA + i]!, a: endA + i, b: endB + i });
  return hunks(ops, context, maxLines);
}

/** hunks groups an edit script into hunks with `context` common lines around each change, and caps the lines. */
function hunks(ops: readonly Op[], context: number, maxLines: number): string {
  const changed = ops.map((op, i) => (op.kind === ' ' ? -1 : i)).filter((i) => i >= 0);
  const out: string[] = [];
  let i = 0;
  while (i < changed.length) {
    const first = Math.max(0, changed[i]! - context);
    let last = changed[i]!;
    while (i + 1 < changed.length && changed[i + 1]! - last <= 2 * context) last = changed[++i]!;
    i++;
    const end = Math.min(ops.length - 1, last + context);
    const slice = ops.slice(first, end + 1);
    const lenA = slice.filter((op) => op.kind !== '+').length;
    const lenB = slice.filter((op) => op.kind !== '-').length;
    const startA = slice.find((op) => op.kind !== '+')?.a ?? slice[0]!.a;
    const startB = slice.find((op) => op.kind !== '-')?.b ?? slice[0]!.b;
    // As diff -u: a range of no lines names the line before it.
    out.push(`@@ -${lenA === 0 ? startA : startA + 1},${lenA} +${lenB === 0 ? startB : startB + 1},${lenB} @@`);
    for (const op of slice) out.push(`${op.kind}${op.line}`);
  }
  if (out.length <= maxLines) return out.join('\n');
  return [...out.slice(0, maxLines), `… ${out.length - maxLines} more lines`].join('\n');
}
