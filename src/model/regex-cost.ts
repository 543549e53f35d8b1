/**
 * The regex cost check: why every regex of the subset (src/model/regex-path.ts) runs in time linear in
 * its input under nginx's PCRE2, which matches by backtracking.
 *
 * The argument. Read a pattern as its position automaton (Glushkov): one state per character-matching
 * item (a literal, `.`, an escape, a class; a counted repeat `{n,m}` is that many copies, at most
 * EXPANDED_REPEAT: a larger one is read as unbounded, which can only refuse more), and an edge
 * p → q when q's item may consume the character right after p's. A backtracking matcher started at the
 * beginning of the subject (every pattern here is anchored: nginx's `^…`, Lua's `^(?:…)$`) walks the
 * tree of runs of this automaton depth-first: a node is one run over a prefix of the subject. If no two
 * different runs over the same prefix end in the same state ("prefix-unambiguous"), the runs over a
 * prefix of length k end in different states, so there are at most m of them (m states), and the whole
 * tree has at most (n + 1)·m nodes for a subject of n characters: O(n·m) steps, whatever the input.
 * `(a|aa)+` fails this (after `aa`: `a`,`a` and `aa` both end in the first state), and so does `.*.*`
 * (after `xy`: the split between the two is free), `(a*)*`, or `(x?|y?)`; `/api/v[0-9]+/.*`,
 * `/foo(/|$)(.*)`, `/(en|de)/` and `/.*\.(jpg|png)$` pass it.
 *
 * The check builds the automaton (assertions are edges that let only some characters through: after
 * `$` only a newline, after a `^` that is not first nothing; `\b`, `\B` and case are read as letting
 * everything through, which can only refuse more) and searches the pairs of states two runs over the
 * same prefix can be in, starting where one state's edges part on a shared character; reaching a pair
 * that joins is a refusal. Its work is bounded by MAX_POSITIONS and MAX_PAIR_STEPS: a pattern too big
 * to prove is refused as such.
 *
 * A pattern nginx runs without an end anchor (`location ~* "^…"`, `rewrite`) may end in `.*`: a run
 * that gets there has matched (`.*` takes what it can and the pattern ends), so the check reads the
 * pattern without it.
 *
 * The cost of one pattern, `weight`, is the number of states reachable from a repeated one: only those
 * can be visited at every subject position, the others at most once per distinct prefix length up to
 * the pattern's length. A request's worst cost on a host is then about (subject length) × (sum of
 * weights + number of regexes) steps, which is what the per-host bound limits.
 */

/** RegexNode is the parsed pattern the cost check reads (groups are transparent: captures do not change cost). */
export type RegexNode =
  | { readonly t: 'set'; readonly bits: Bits; readonly at: number }
  | { readonly t: 'assert'; readonly kind: '^' | '$' | 'b' }
  | { readonly t: 'seq'; readonly items: readonly RegexNode[] }
  | { readonly t: 'alt'; readonly branches: readonly RegexNode[] }
  | { readonly t: 'rep'; readonly body: RegexNode; readonly min: number; readonly max: number | null };

/** Bits is a set of bytes (PCRE2 in nginx and ngx.re without "u" matches bytes). */
export type Bits = Uint32Array;

/** MAX_POSITIONS bounds the states of a pattern's automaton (counted repeats copied out). */
export const MAX_POSITIONS = 512;
/** MAX_PAIR_STEPS bounds the work of the ambiguity search (a few milliseconds). */
export const MAX_PAIR_STEPS = 200_000;
/** EXPANDED_REPEAT is the most copies of a counted repeat's body the automaton holds. */
const EXPANDED_REPEAT = 8;

/** bitsOf gives the byte set of the given character codes, folded to both cases (nginx matches paths with `~*`). */
export function bitsOf(codes: Iterable<number>): Bits {
  const bits = new Uint32Array(8);
  for (const c of codes) {
    bits[c >>> 5]! |= 1 << (c & 31);
    if (c >= 65 && c <= 90) bits[(c + 32) >>> 5]! |= 1 << ((c + 32) & 31);
    if (c >= 97 && c <= 122) bits[(c - 32) >>> 5]! |= 1 << ((c - 32) & 31);
  }
  return bits;
}

/** complement gives the bytes not in `bits`. */
export function complement(bits: Bits): Bits {
  return bits.map((w) => ~w >>> 0);
}

/** union gives the bytes in either set. */
export function union(a: Bits, b: Bits): Bits {
  return a.map((w, i) => (w | b[i]!) >>> 0);
}

function intersect(a: Bits, b: Bits): Bits {
  return a.map((w, i) => (w & b[i]!) >>> 0);
}

function overlaps(a: Bits, b: Bits): boolean {
  for (let i = 0; i < 8; i++) if ((a[i]! & b[i]!) !== 0) return true;
  return false;
}

function isEmpty(a: Bits): boolean {
  return a.every((w) => w === 0);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
/** ALL is every byte; DOT every byte but the newline (`.` without the s flag). */
export const ALL: Bits = complement(new Uint32Array(8));
export const DOT: Bits = complement(bitsOf([10]));
/** The sets of `\d`, `\w` and `\s` (PCRE2 without UCP: ASCII only). */
export const DIGIT: Bits = bitsOf(range(48, 57));
export const WORD: Bits = bitsOf([...range(48, 57), ...range(65, 90), ...range(97, 122), 95]);
export const SPACE: Bits = bitsOf([9, 10, 11, 12, 13, 32]);
const NEWLINE = bitsOf([10]);

/** A constraint on the next character from the assertions crossed to reach it; `caret` crossed a `^`. */
interface Mask {
  readonly bits: Bits;
  readonly caret: boolean;
}
const FREE: Mask = { bits: ALL, caret: false };
const both = (a: Mask, b: Mask): Mask =>
  a === FREE ? b : b === FREE ? a : { bits: intersect(a.bits, b.bits), caret: a.caret || b.caret };

interface Entry {
  readonly pos: number;
  readonly mask: Mask;
}
/** What the automaton of a sub-pattern looks like from outside: where it starts, ends, and whether it can be empty. */
interface Info {
  readonly first: readonly Entry[];
  readonly last: readonly Entry[];
  readonly nullable: Mask | null;
}

/** Ambiguous is thrown where two runs are found; the message says where. */
export class Ambiguous extends Error {}

class Automaton {
  readonly sets: Bits[] = [];
  readonly offsets: number[] = [];
  readonly looping: boolean[] = [];
  /** edges[p]: target → the characters that may cross (already cut to the target's set) */
  readonly edges: Map<number, Bits>[] = [];

  position(bits: Bits, at: number): number {
    if (this.sets.length >= MAX_POSITIONS)
      throw new Ambiguous(
        `a pattern of more than ${MAX_POSITIONS} character items (repeats counted out), too big to prove linear`,
      );
    this.sets.push(bits);
    this.offsets.push(at);
    this.looping.push(false);
    this.edges.push(new Map());
    return this.sets.length - 1;
  }

  edge(p: number, q: number, mask: Mask): void {
    if (mask.caret) return; // a `^` after a character never matches
    const crossing = intersect(mask.bits, this.sets[q]!);
    if (isEmpty(crossing)) return;
    const had = this.edges[p]!.get(q);
    if (had !== undefined && overlaps(had, crossing))
      throw new Ambiguous(
        `a repeat whose body can already repeat or match nothing (two ways to reach offset ${this.offsets[q]})`,
      );
    this.edges[p]!.set(q, had === undefined ? crossing : union(had, crossing));
  }

  build(node: RegexNode): Info {
    switch (node.t) {
      case 'set': {
        const pos = this.position(node.bits, node.at);
        return { first: [{ pos, mask: FREE }], last: [{ pos, mask: FREE }], nullable: null };
      }
      case 'assert': {
        const mask =
          node.kind === '^' ? { bits: ALL, caret: true } : node.kind === '$' ? { bits: NEWLINE, caret: false } : FREE;
        return { first: [], last: [], nullable: mask };
      }
      case 'seq':
        return node.items.reduce<Info>((a, item) => this.sequence(a, this.build(item)), {
          first: [],
          last: [],
          nullable: FREE,
        });
      case 'alt': {
        const infos = node.branches.map((b) => this.build(b));
        const empty = infos.filter((i) => i.nullable !== null);
        if (empty.length > 1) throw new Ambiguous('an alternation with two branches that can both match nothing');
        return {
          first: infos.flatMap((i) => i.first),
          last: infos.flatMap((i) => i.last),
          nullable: empty[0]?.nullable ?? null,
        };
      }
      case 'rep':
        return this.repeat(node.body, node.min, node.max);
    }
  }

  private sequence(a: Info, b: Info): Info {
    for (const p of a.last) for (const q of b.first) this.edge(p.pos, q.pos, both(p.mask, q.mask));
    const masked = (entries: readonly Entry[], mask: Mask) =>
      entries.map((e) => ({ pos: e.pos, mask: both(mask, e.mask) }));
    return {
      first: a.nullable ? [...a.first, ...masked(b.first, a.nullable)] : a.first,
      last: b.nullable ? [...b.last, ...masked(a.last, b.nullable)] : b.last,
      nullable: a.nullable && b.nullable ? both(a.nullable, b.nullable) : null,
    };
  }

  private optional(info: Info): Info {
    if (info.nullable !== null) throw new Ambiguous('an optional or repeated part that can already match nothing');
    return { ...info, nullable: FREE };
  }

  private repeat(body: RegexNode, atLeast: number, atMost: number | null): Info {
    // Past EXPANDED_REPEAT copies, x{n,m} is read as x{min(n, EXPANDED_REPEAT),}: every run of the first maps to
    // one run of the second (the copy a run is in is its count so far), so two that join there join here too.
    const wide = atLeast > EXPANDED_REPEAT || (atMost !== null && atMost > EXPANDED_REPEAT);
    const min = wide ? Math.min(atLeast, EXPANDED_REPEAT) : atLeast;
    const max = wide ? null : atMost;
    const copies: Info[] = [];
    for (let i = 0; i < min; i++) copies.push(this.build(body));
    if (max === null) {
      const from = this.sets.length;
      const loop = this.build(body);
      if (loop.nullable !== null) throw new Ambiguous('a repeat of something that can match nothing');
      for (const p of loop.last) for (const q of loop.first) this.edge(p.pos, q.pos, both(p.mask, q.mask));
      for (let i = from; i < this.sets.length; i++) this.looping[i] = true;
      // x{n,} is n copies and x*: the last mandatory copy and the star are one loop in PCRE2, the same runs
      copies.push(this.optional(loop));
    } else {
      // x{n,m}: n copies, then (x(x(…)?)?)? nested m - n deep
      let tail: Info | null = null;
      for (let i = max - min; i > 0; i--) {
        const copy = this.build(body);
        tail = this.optional(tail === null ? copy : this.sequence(copy, tail));
      }
      if (tail !== null) copies.push(tail);
    }
    return copies.reduce<Info>((a, c) => this.sequence(a, c), { first: [], last: [], nullable: FREE });
  }
}

/** RegexCost is what the cost check found: the pattern's weight (see the header). */
export interface RegexCost {
  readonly weight: number;
}

/** withoutTrailingAnyRun gives the pattern without a final `.*` (lazy or not, captured or not), or as it is. */
function withoutTrailingAnyRun(node: RegexNode): RegexNode {
  if (node.t !== 'seq' || node.items.length === 0) return node;
  let last = node.items[node.items.length - 1]!;
  // a group is transparent: `(.*)` is a one-branch alternation or sequence of `.*`
  while ((last.t === 'alt' && last.branches.length === 1) || (last.t === 'seq' && last.items.length === 1))
    last = last.t === 'alt' ? last.branches[0]! : last.items[0]!;
  const anyRun =
    last.t === 'rep' &&
    last.min === 0 &&
    last.max === null &&
    last.body.t === 'set' &&
    last.body.bits.every((w, i) => w === DOT[i]);
  return anyRun ? { t: 'seq', items: node.items.slice(0, -1) } : node;
}

/**
 * regexCost checks that a parsed pattern is prefix-unambiguous (see the header) and gives its weight, or throws
 * Ambiguous saying why not. `endAnchored` is false where nginx runs it as `^…` without `$`.
 */
export function regexCost(root: RegexNode, endAnchored: boolean): RegexCost {
  const automaton = new Automaton();
  const top = automaton.build(endAnchored ? root : withoutTrailingAnyRun(root));
  const starts = new Map<number, Bits>();
  for (const e of top.first) {
    // a `^` before anything is consumed holds: only the masks' characters matter here
    const crossing = intersect(e.mask.bits, automaton.sets[e.pos]!);
    if (!isEmpty(crossing)) starts.set(e.pos, crossing);
  }
  searchPairs(automaton, starts);
  return { weight: weight(automaton, starts) };
}

/** searchPairs throws Ambiguous when two runs over one prefix can end in one state. */
function searchPairs(automaton: Automaton, starts: Map<number, Bits>): void {
  const out = [starts, ...automaton.edges];
  // state 0 is before anything; position i is state i + 1
  const targets = out.map((m) => [...m].map(([q, bits]) => ({ q: q + 1, bits })));
  const seen = new Set<number>();
  const queue: number[] = [];
  const n = out.length;
  let steps = 0;
  const tick = () => {
    if (++steps > MAX_PAIR_STEPS)
      throw new Ambiguous('a pattern too intricate to prove linear (too many ways to follow it at once)');
  };
  const push = (a: number, b: number) => {
    const key = a < b ? a * n + b : b * n + a;
    if (!seen.has(key)) {
      seen.add(key);
      queue.push(key);
    }
  };
  // where one state's edges part on a character both can take
  for (const edges of targets) {
    for (let i = 0; i < edges.length; i++)
      for (let j = i + 1; j < edges.length; j++) {
        tick();
        if (overlaps(edges[i]!.bits, edges[j]!.bits)) push(edges[i]!.q, edges[j]!.q);
      }
  }
  while (queue.length > 0) {
    const key = queue.pop()!;
    const a = Math.floor(key / n);
    const b = key % n;
    for (const x of targets[a]!)
      for (const y of targets[b]!) {
        tick();
        if (!overlaps(x.bits, y.bits)) continue;
        if (x.q === y.q)
          throw new Ambiguous(
            `two ways to match the same text up to offset ${automaton.offsets[x.q - 1]} (nested or overlapping ` +
              'repeats, such as (a|aa)+ or .*.*, make nginx backtrack through every split)',
          );
        push(x.q, y.q);
      }
  }
}

/** weight counts the states reachable from a repeated one (see the header). */
function weight(automaton: Automaton, starts: Map<number, Bits>): number {
  const reached = new Set<number>();
  const stack: number[] = [];
  const reachable = new Set<number>([...starts.keys()]);
  const all: number[] = [...starts.keys()];
  while (all.length > 0) {
    const p = all.pop()!;
    for (const q of automaton.edges[p]!.keys())
      if (!reachable.has(q)) {
        reachable.add(q);
        all.push(q);
      }
  }
  for (const p of reachable)
    if (automaton.looping[p]) {
      reached.add(p);
      stack.push(p);
    }
  while (stack.length > 0) {
    const p = stack.pop()!;
    for (const q of automaton.edges[p]!.keys())
      if (!reached.has(q)) {
        reached.add(q);
        stack.push(q);
      }
  }
  return reached.size;
}
