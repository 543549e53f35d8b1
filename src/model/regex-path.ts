/**
 * The regex path check: an Ingress path used as a regular expression (use-regex, rewrite-target)
 * goes into nginx.conf as `location ~* "^<path>"` and `rewrite "(?i)^<path>"`, which nginx hands
 * to PCRE2; a pattern PCRE2 refuses fails `nginx -t` for every tenant. There is no PCRE2 here to
 * ask, and JavaScript's RegExp is no stand-in (it accepts `[\w-.]`, `[\d-z]` and `a{99999}`, which
 * PCRE2 refuses, and reads `[]a` differently), so this is a small parser of its own: it accepts a
 * subset whose meaning is the same in PCRE2 and JavaScript and which PCRE2 compiles, and refuses
 * the rest by name. It reads the value once, left to right, so it runs in linear time.
 *
 * The subset:
 * - literals: letters, digits and `_ ~ - / : & = ,`; `\` before any of `. ^ $ | ? * + ( ) [ ] { } / \ -`
 * - `.`, `^`, `$`, `\d \w \s \D \W \S`, and `\b \B` outside classes
 * - classes `[…]` / `[^…]`, not empty, of literals (`]`, `[`, `\`, `^` escaped) and `\d \w \s \D \W \S`;
 *   ranges only between two literal characters in order; `-` literal only first or last
 * - groups `( )` and `(?: )`, alternation `|`
 * - quantifiers `* + ? {n} {n,} {n,m}`, optionally lazy (`?`), after a literal, `.`, a class or a group
 *
 * Limits: at most 1024 characters; each bound at most MAX_REPEAT; the product of nested counts at
 * most MAX_REPEAT (PCRE2 copies a repeated group once per count); the estimated compiled size at
 * most MAX_COMPILED_SIZE bytes, half of the 64 KiB PCRE2 (link size 2, as Debian builds it) takes.
 */
import {
  ALL,
  Ambiguous,
  bitsOf,
  type Bits,
  complement,
  DIGIT,
  DOT,
  type RegexCost,
  type RegexNode,
  regexCost,
  SPACE,
  union,
  WORD,
} from './regex-cost.js';
import { show, type Checked } from './validate.js';

/** MAX_REGEX_PATH is the longest regex path accepted, checked before anything else reads it. */
export const MAX_REGEX_PATH = 1024;
/** MAX_REPEAT bounds every `{n,m}` and the product of nested repeat counts. */
export const MAX_REPEAT = 1000;
/** MAX_COMPILED_SIZE bounds the estimated compiled pattern, in bytes (PCRE2 refuses past 64 KiB here). */
export const MAX_COMPILED_SIZE = 32 * 1024;
const MAX_DEPTH = 32;

const LITERAL = /^[A-Za-z0-9_~\-/:&=,]$/;
const ESCAPABLE = /^[.^$|?*+()[\]{}/\\-]$/;
const CLASS_ESCAPES = /^[dwsDWS]$/;
/** Characters nginx.conf and PCRE2 both read plainly inside a class: the literals and `. $ | ? * + ( ) { }`. */
const CLASS_LITERAL = /^[A-Za-z0-9_~\-/:&=,.$|?*+(){}]$/;

class Refused extends Error {}

/** Sizes of PCRE2 opcodes (8-bit, link size 2), rounded up: what the compiled-size estimate adds. */
const SIZE = { char: 2, single: 1, class: 33, group: 8, alt: 3, repeat: 4 } as const;

interface Piece {
  /** estimated compiled size in bytes */
  readonly size: number;
  /** one opcode (literal, `.`, escape, class): PCRE2 repeats it with a count instead of copies */
  readonly single: boolean;
  /** the largest product of repeat counts inside */
  readonly counts: number;
  /** what the cost check reads */
  readonly node: RegexNode;
}

const ESCAPE_SETS: Readonly<Record<string, Bits>> = {
  d: DIGIT,
  w: WORD,
  s: SPACE,
  D: complement(DIGIT),
  W: complement(WORD),
  S: complement(SPACE),
};
const code = (c: string) => c.charCodeAt(c.length - 1);

class Parser {
  private at = 0;
  constructor(private readonly text: string) {}

  private refuse(what: string): never {
    throw new Refused(`${what} at offset ${this.at}`);
  }

  private peek(offset = 0): string | undefined {
    return this.text[this.at + offset];
  }

  parse(): Piece {
    const piece = this.alternation(0);
    if (this.at < this.text.length) this.refuse(`an unmatched ')'`);
    return piece;
  }

  private alternation(depth: number): Piece {
    let size = 0;
    let counts = 1;
    const branches: RegexNode[] = [];
    for (;;) {
      const branch = this.sequence(depth);
      size += branch.size;
      counts = Math.max(counts, branch.counts);
      branches.push(branch.node);
      if (this.peek() !== '|')
        return { size, single: false, counts, node: branches.length === 1 ? branches[0]! : { t: 'alt', branches } };
      this.at++;
      size += SIZE.alt;
    }
  }

  private sequence(depth: number): Piece {
    let size = 0;
    let counts = 1;
    const items: RegexNode[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') return { size, single: false, counts, node: { t: 'seq', items } };
      const atom = this.atom(depth);
      const piece = atom.repeatable ? this.quantified(atom.piece) : atom.piece;
      if (!atom.repeatable && this.isQuantifier()) this.refuse(`a quantifier after ${atom.name}, which cannot repeat`);
      size += piece.size;
      counts = Math.max(counts, piece.counts);
      items.push(piece.node);
      if (size > MAX_COMPILED_SIZE)
        this.refuse(`a pattern larger than PCRE2 compiles comfortably (over ${MAX_COMPILED_SIZE} bytes estimated)`);
    }
  }

  private isQuantifier(): boolean {
    const c = this.peek();
    return c === '*' || c === '+' || c === '?' || (c === '{' && /^\d/.test(this.peek(1) ?? ''));
  }

  private atom(depth: number): { piece: Piece; repeatable: boolean; name: string } {
    const c = this.peek()!;
    const at = this.at;
    const single = (size: number, node: RegexNode): Piece => ({ size, single: true, counts: 1, node });
    const set = (bits: Bits): RegexNode => ({ t: 'set', bits, at });
    if (LITERAL.test(c)) {
      this.at++;
      return { piece: single(SIZE.char, set(bitsOf([code(c)]))), repeatable: true, name: 'a literal' };
    }
    if (c === '.') {
      this.at++;
      return { piece: single(SIZE.single, set(DOT)), repeatable: true, name: "'.'" };
    }
    if (c === '^' || c === '$') {
      this.at++;
      return { piece: single(SIZE.single, { t: 'assert', kind: c }), repeatable: false, name: `'${c}'` };
    }
    if (c === '\\') {
      const e = this.peek(1);
      if (e === undefined) this.refuse('a trailing \\');
      this.at += 2;
      if (CLASS_ESCAPES.test(e))
        return { piece: single(SIZE.single, set(ESCAPE_SETS[e]!)), repeatable: true, name: `\\${e}` };
      if (e === 'b' || e === 'B')
        return { piece: single(SIZE.single, { t: 'assert', kind: 'b' }), repeatable: false, name: `\\${e}` };
      if (ESCAPABLE.test(e))
        return { piece: single(SIZE.char, set(bitsOf([code(e)]))), repeatable: true, name: `\\${e}` };
      this.at -= 2;
      this.refuse(`the escape \\${e} (only \\d \\w \\s \\D \\W \\S \\b \\B and escaped symbols)`);
    }
    if (c === '[') {
      const bits = this.characterClass();
      return { piece: single(SIZE.class, set(bits)), repeatable: true, name: 'a class' };
    }
    if (c === '(') {
      if (depth >= MAX_DEPTH) this.refuse(`groups nested deeper than ${MAX_DEPTH}`);
      this.at++;
      if (this.peek() === '?') {
        if (this.peek(1) !== ':') this.refuse(`the group '(?${this.peek(1) ?? ''}' (only '(' and '(?:')`);
        this.at += 2;
      }
      const inner = this.alternation(depth + 1);
      if (this.peek() !== ')') this.refuse(`a '(' without its ')'`);
      this.at++;
      return {
        piece: { size: inner.size + SIZE.group, single: false, counts: inner.counts, node: inner.node },
        repeatable: true,
        name: 'a group',
      };
    }
    if (c === '*' || c === '+' || c === '?') this.refuse(`a quantifier '${c}' with nothing to repeat`);
    if (c === '{' || c === '}') this.refuse(`a '${c}' that is not part of a {n}, {n,} or {n,m} quantifier`);
    if (c === ']') this.refuse(`a ']' without its '['`);
    this.refuse(`the character ${show(c)}`);
  }

  /** characterClass reads `[…]` and gives the bytes it matches. */
  private characterClass(): Bits {
    this.at++;
    const negated = this.peek() === '^';
    if (negated) this.at++;
    let bits = bitsOf([]);
    const start = this.at;
    // PCRE2 reads `[.` … `.]`, `[:` … `:]` and `[=` … `=]` as POSIX elements (and refuses most of them).
    const opener = this.peek();
    if ((opener === '.' || opener === ':' || opener === '=') && this.text.indexOf(`${opener}]`, start + 1) !== -1) {
      this.refuse(
        `a class starting with '${opener}' and holding '${opener}]' (PCRE2 reads it as a POSIX [${opener} ${opener}] element)`,
      );
    }
    // A literal member (an escaped one marked by its backslash), or null for \d and friends, which cannot end a range.
    const member = (): string | null => {
      const c = this.peek();
      if (c === undefined) this.refuse(`a '[' without its ']'`);
      if (c === '\\') {
        const e = this.peek(1);
        if (e !== undefined && CLASS_ESCAPES.test(e)) {
          this.at += 2;
          bits = union(bits, ESCAPE_SETS[e]!);
          return null;
        }
        if (e !== undefined && (ESCAPABLE.test(e) || e === '^')) {
          this.at += 2;
          return `\\${e}`;
        }
        this.refuse(`the escape \\${e ?? ''} in a class (only \\d \\w \\s \\D \\W \\S and escaped symbols)`);
      }
      if (c === '[') this.refuse(`an unescaped '[' in a class (PCRE2 reads '[:' as a POSIX class)`);
      if (!CLASS_LITERAL.test(c)) this.refuse(`the character ${show(c)} in a class`);
      this.at++;
      return c;
    };
    while (this.peek() !== ']') {
      if (this.peek() === undefined) this.refuse(`a '[' without its ']'`);
      const first = this.at === start;
      const lo = member();
      if (this.peek() === '-' && this.peek(1) !== ']') {
        if (lo === null) this.refuse("a range from a class escape (PCRE2 refuses it, JavaScript reads a literal '-')");
        if (lo === '-' && !first) this.refuse(`a '-' in the middle of a class (escape it, or put it first or last)`);
        this.at++;
        const hi = member();
        if (hi === null) this.refuse("a range to a class escape (PCRE2 refuses it, JavaScript reads a literal '-')");
        if (hi === '-') this.refuse(`a range ending in '-'`);
        if (hi.slice(-1) < lo.slice(-1)) this.refuse(`the range ${lo}-${hi}, out of order`);
        bits = union(bits, bitsOf(Array.from({ length: code(hi) - code(lo) + 1 }, (_, i) => code(lo) + i)));
      } else if (lo === '-' && !first && this.peek() !== ']') {
        this.refuse(`a '-' in the middle of a class (escape it, or put it first or last)`);
      } else if (lo !== null) {
        bits = union(bits, bitsOf([code(lo)]));
      }
    }
    if (this.at === start) this.refuse(`an empty class (PCRE2 reads '[]' as the start of a class holding ']')`);
    this.at++;
    return negated ? complement(bits) : bits.map((w, i) => w & ALL[i]!);
  }

  /** quantified reads the quantifier after an atom, if any, and gives the repeated piece. */
  private quantified(atom: Piece): Piece {
    const c = this.peek();
    let lower: number;
    let upper: number | null;
    if (c === '*' || c === '+' || c === '?') {
      this.at++;
      [lower, upper] = c === '*' ? [0, null] : c === '+' ? [1, null] : [0, 1];
    } else if (c === '{' && /^\d/.test(this.peek(1) ?? '')) {
      this.at++;
      lower = this.bound();
      upper = lower;
      if (this.peek() === ',') {
        this.at++;
        upper = /^\d/.test(this.peek() ?? '') ? this.bound() : null;
      }
      if (this.peek() !== '}') this.refuse(`a '{' that is not a {n}, {n,} or {n,m} quantifier`);
      this.at++;
      if (upper !== null && upper < lower) this.refuse(`the quantifier {${lower},${upper}}, out of order`);
    } else {
      return atom;
    }
    if (this.peek() === '?') this.at++;
    if (this.isQuantifier())
      this.refuse(`a second quantifier (possessive '+' and '{' after a quantifier are PCRE2-only)`);
    const count = Math.max(upper ?? lower + 1, 1);
    const counts = atom.counts * count;
    if (counts > MAX_REPEAT) this.refuse(`nested repeats of ${counts} in all (at most ${MAX_REPEAT})`);
    // PCRE2 repeats one opcode with a count, and copies a group once per count.
    const size = atom.single ? atom.size + SIZE.repeat : atom.size * count + SIZE.repeat;
    return { size, single: false, counts, node: { t: 'rep', body: atom.node, min: lower, max: upper } };
  }

  private bound(): number {
    const start = this.at;
    while (/^\d$/.test(this.peek() ?? '') && this.at - start < 5) this.at++;
    const n = Number(this.text.slice(start, this.at));
    if (/^\d$/.test(this.peek() ?? '') || n > MAX_REPEAT) this.refuse(`a repeat count above ${MAX_REPEAT}`);
    return n;
  }
}

/**
 * RegexAnchoring is how nginx runs a pattern: `start` as `^…` (an Ingress path's `location ~*`, a `rewrite`),
 * `both` as `^(?:…)$` (the Gateway router's ngx.re). A final `.*` costs nothing in the first (see regex-cost.ts).
 */
export type RegexAnchoring = 'start' | 'both';

/**
 * checkRegexPath accepts an Ingress path used as a regular expression (use-regex, rewrite-target), or a
 * Gateway RegularExpression path, when it starts with `/` and lies in the subset above, which PCRE2 and
 * JavaScript read alike, PCRE2 compiles and runs in linear time; anything else is refused with what was
 * refused and where.
 */
export function checkRegexPath(value: unknown, anchoring: RegexAnchoring = 'start'): Checked<string> {
  if (typeof value !== 'string' || !value.startsWith('/'))
    return { ok: false, message: `${show(value)} must be a regex starting with '/'` };
  if (value.length > MAX_REGEX_PATH) return { ok: false, message: `is longer than ${MAX_REGEX_PATH} characters` };
  const refused = regexSubsetRefusal(value, anchoring);
  return refused === null ? { ok: true, value } : { ok: false, message: `${show(value)}: ${refused}` };
}

/** analyze parses a pattern and runs the cost check: its cost, or why it is refused. */
function analyze(value: string, anchoring: RegexAnchoring): RegexCost | string {
  const node = parsed(value);
  if (typeof node === 'string') return node;
  try {
    return regexCost(node, anchoring === 'both');
  } catch (error) {
    if (error instanceof Ambiguous)
      return `${error.message}: refused, as nginx's backtracking could take far more than linear time on some input`;
    throw error;
  }
}

/**
 * regexSubsetRefusal says why a regular expression (of at most MAX_REGEX_PATH characters, the
 * caller checks) lies outside the subset above, or null when it lies inside: for patterns that
 * need not be paths (a header match, a snippet's `rewrite`).
 */
export function regexSubsetRefusal(value: string, anchoring: RegexAnchoring = 'start'): string | null {
  const found = analyze(value, anchoring);
  return typeof found === 'string' ? found : null;
}

/**
 * regexSyntaxRefusal is regexSubsetRefusal without the cost check: for patterns no backtracking engine runs (the
 * test API server's schema patterns, which V8's linear engine runs).
 */
export function regexSyntaxRefusal(value: string): string | null {
  const node = parsed(value);
  return typeof node === 'string' ? node : null;
}

/** parsed reads a pattern of the subset's syntax, or says why it is not. */
function parsed(value: string): RegexNode | string {
  try {
    return new Parser(value).parse().node;
  } catch (error) {
    if (error instanceof Refused) return `${error.message} is not in the regex subset nginx is sure to read as written`;
    throw error;
  }
}

/**
 * regexWeight is the request-time weight of an accepted pattern (regex-cost.ts: the states that can be
 * visited at every subject position), plus one for trying it at all: what the per-host bound adds up.
 * A refused pattern weighs nothing (it never reaches nginx).
 */
export function regexWeight(value: string, anchoring: RegexAnchoring = 'start'): number {
  const key = `${anchoring} ${value}`;
  let weight = WEIGHTS.get(key);
  if (weight === undefined) {
    const found = analyze(value, anchoring);
    weight = typeof found === 'string' ? 0 : found.weight + 1;
    // every build settles its changed hosts again: remember the weights, boundedly (a full table starts over)
    if (WEIGHTS.size >= MAX_REMEMBERED_WEIGHTS) WEIGHTS.clear();
    WEIGHTS.set(key, weight);
  }
  return weight;
}

const MAX_REMEMBERED_WEIGHTS = 10_000;
const WEIGHTS = new Map<string, number>();
