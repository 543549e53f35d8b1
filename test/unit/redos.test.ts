/**
 * Every regular expression in src/ is checked by recheck, a ReDoS checker: a pattern whose
 * backtracking can grow faster than linearly with its input is a way for one tenant to freeze
 * the controller's event loop for everyone. The patterns are found with the TypeScript compiler
 * (regex literals and `new RegExp(...)` whose arguments it can evaluate; one it cannot is a
 * failure too, since nothing could check it).
 *
 * recheck runs in its pure JavaScript build (RECHECK_SYNC_BACKEND=pure: no Java, no native binary),
 * with the automaton checker first and, where that gives up (large bounded repeats), the fuzzer
 * with a fixed seed, so the verdict is the same on every run.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { checkSync } from '../support/recheck.js';

const ROOT = join(import.meta.dirname, '..', '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sourceFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

interface Found {
  readonly where: string;
  readonly source: string | null;
  readonly flags: string;
  readonly text: string;
}

/**
 * constValue evaluates what a `new RegExp` argument is built from: strings, templates, consts of the same file,
 * `.join`.
 */
function constValue(
  node: ts.Expression,
  consts: ReadonlyMap<string, ts.Expression>,
  depth = 0,
): string | string[] | null {
  if (depth > 10) return null;
  if (ts.isParenthesizedExpression(node)) return constValue(node.expression, consts, depth + 1);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isTaggedTemplateExpression(node) && node.tag.getText() === 'String.raw') {
    const template = node.template;
    if (ts.isNoSubstitutionTemplateLiteral(template)) return template.rawText ?? null;
    return null;
  }
  if (ts.isTemplateExpression(node)) {
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const value = constValue(span.expression, consts, depth + 1);
      if (typeof value !== 'string') return null;
      text += value + span.literal.text;
    }
    return text;
  }
  if (ts.isIdentifier(node)) {
    const init = consts.get(node.text);
    return init ? constValue(init, consts, depth + 1) : null;
  }
  if (ts.isArrayLiteralExpression(node)) {
    const items = node.elements.map((e) => constValue(e, consts, depth + 1));
    return items.every((i): i is string => typeof i === 'string') ? items : null;
  }
  if (ts.isAsExpression(node)) return constValue(node.expression, consts, depth + 1);
  if (
    ts.isCallExpression(node) &&
    ts.isPropertyAccessExpression(node.expression) &&
    node.expression.name.text === 'join'
  ) {
    const list = constValue(node.expression.expression, consts, depth + 1);
    const separator = node.arguments[0] ? constValue(node.arguments[0], consts, depth + 1) : ',';
    return Array.isArray(list) && typeof separator === 'string' ? list.join(separator) : null;
  }
  return null;
}

/** findRegexes lists every regex literal and `new RegExp(` / `RegExp(` in one file. */
function findRegexes(file: string): Found[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const consts = new Map<string, ts.Expression>();
  const collect = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      ts.isIdentifier(node.name) &&
      node.initializer &&
      ts.getCombinedNodeFlags(node) & ts.NodeFlags.Const
    ) {
      consts.set(node.name.text, node.initializer);
    }
    ts.forEachChild(node, collect);
  };
  collect(sf);
  const found: Found[] = [];
  const where = (node: ts.Node) =>
    `${relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
  const visit = (node: ts.Node): void => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const literal = node.getText();
      const slash = literal.lastIndexOf('/');
      found.push({
        where: where(node),
        source: literal.slice(1, slash),
        flags: literal.slice(slash + 1),
        text: literal,
      });
    } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && node.expression.getText() === 'RegExp') {
      const [pattern, flags] = node.arguments ?? [];
      const source = pattern ? constValue(pattern, consts) : null;
      const flagText = flags ? constValue(flags, consts) : '';
      found.push({
        where: where(node),
        source: typeof source === 'string' && typeof flagText === 'string' ? source : null,
        flags: typeof flagText === 'string' ? flagText : '',
        text: node.getText().slice(0, 100),
      });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/**
 * verdict is recheck's status for one pattern: the automaton's when it decides within 3 s, else the seeded fuzzer's.
 * The fuzzer may not judge by the clock: on a loaded machine its timed attacks "found" safe patterns vulnerable (a
 * stress run met two). Without timeouts it counts steps only, so its verdict is the same on any machine.
 */
function verdict(source: string, flags: string): string {
  // `g` and `y` change where matching starts, not the automaton recheck analyses.
  const f = flags.replace(/[gy]/g, '');
  const automaton = checkSync(source, f, { checker: 'automaton', timeout: 3_000 });
  if (automaton.status !== 'unknown') return automaton.status;
  return checkSync(source, f, {
    checker: 'fuzz',
    randomSeed: 14,
    timeout: null,
    incubationTimeout: null,
    attackTimeout: null,
    recallTimeout: -1,
  }).status;
}

describe('regular expressions in src/', () => {
  const all = sourceFiles(join(ROOT, 'src')).flatMap(findRegexes);

  it('finds the regexes there are (the walk is not silently empty)', () => {
    expect(all.length).toBeGreaterThan(50);
    expect(all.some((f) => f.where.startsWith('src/model/validate.ts'))).toBe(true);
  });

  it('recheck finds a known-bad pattern vulnerable (the checker works here)', () => {
    expect(verdict('^(?:[A-Za-z0-9_.:/-]|\\$[A-Za-z_][A-Za-z0-9_]*)+$', '')).toBe('vulnerable');
    expect(verdict('\\/+$', '')).toBe('vulnerable');
  });

  it("the `l` flag the API server's schema patterns use is V8's linear engine (a backtracking pattern stays fast)", async () => {
    const { patternChecked } = await import('../../src/dev/api-server/schema.js');
    // compiling a schema pattern switches the engine on
    expect(patternChecked('^[a-z]+$')).toBe(true);
    // backtracking would take 2^60 steps here (the test would never end); the automaton takes 61
    // biome-ignore lint/complexity/useRegexLiterals: biome's parser does not know V8's `l` flag in a literal
    const evil = new RegExp('^(a|a)*$', 'l');
    expect(evil.test(`${'a'.repeat(60)}!`)).toBe(false);
  });

  it('finding 1: every regex literal and new RegExp( in src/ is safe by recheck (linear time)', () => {
    const unsafe: string[] = [];
    for (const found of all) {
      // `l` selects V8's automaton engine: it refuses at compile time what it cannot run without backtracking.
      if (found.flags.includes('l')) continue;
      if (found.source === null) {
        unsafe.push(`${found.where}: ${found.text}: cannot be evaluated statically, so cannot be checked`);
        continue;
      }
      const status = verdict(found.source, found.flags);
      if (status !== 'safe') unsafe.push(`${found.where}: ${found.text}: ${status}`);
    }
    expect(unsafe, `unsafe regexes:\n${unsafe.join('\n')}`).toEqual([]);
  }, 300_000);
});
