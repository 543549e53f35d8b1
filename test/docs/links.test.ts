/**
 * Every relative link in README.md and docs/**\/*.md points at a file that exists, and a link with an anchor
 * (`page.md#heading`, or `#heading` within the page) at a heading of that page, as GitHub spells its anchors. Links
 * to other sites are not followed (this suite runs without the network).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** markdownFiles lists README.md and every .md file under docs/, as paths from the root. */
function markdownFiles(): string[] {
  const found = ['README.md'];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (name.endsWith('.md')) found.push(path);
    }
  };
  walk('docs');
  return found;
}

/** prose drops fenced code blocks and inline code spans, where a `[x](y)` is an example, not a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** links finds the targets of markdown links and images: `[text](target)`, `![alt](target "title")`. */
function links(text: string): string[] {
  const found: string[] = [];
  for (const match of prose(text).matchAll(/!?\[(?:[^\]\n]|\][^(\n])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g))
    found.push(match[1]!);
  return found;
}

/**
 * anchors lists the anchors GitHub gives a page's headings: lower case, markup and punctuation other than `-` and
 * `_` dropped, each space a `-`; a repeated one gets `-1`, `-2`, …
 */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const withoutFences = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const [, heading] of withoutFences.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const slug = heading!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>/g, '')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

const EXTERNAL = /^[a-z][a-z0-9+.-]*:/i;

describe('relative links in README.md and docs/', () => {
  for (const file of markdownFiles()) {
    it(`${file}: every relative link reaches a file and, with an anchor, a heading there`, () => {
      const text = readFileSync(join(ROOT, file), 'utf8');
      const broken: string[] = [];
      for (const target of links(text)) {
        if (EXTERNAL.test(target)) continue;
        const hash = target.indexOf('#');
        const path = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
        const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
        const absolute = path === '' ? join(ROOT, file) : resolve(ROOT, dirname(file), path);
        if (!absolute.startsWith(ROOT) || !existsSync(absolute)) {
          broken.push(`${target}: no file ${relative(ROOT, absolute)}`);
          continue;
        }
        if (anchor === null || !absolute.endsWith('.md')) continue;
        if (!anchors(readFileSync(absolute, 'utf8')).has(anchor))
          broken.push(`${target}: no heading with anchor #${anchor} in ${relative(ROOT, absolute)}`);
      }
      expect(broken).toEqual([]);
    });
  }

  it('finds links and spells anchors as GitHub does', () => {
    expect(links('[a](b.md) ![c](d.png "t") `[e](f.md)`\n```\n[g](h.md)\n```\n[i](j.md#k)')).toEqual([
      'b.md',
      'd.png',
      'j.md#k',
    ]);
    expect([...anchors("## The webhook's own certificate (`--validating-webhook-secret`)\n## A\n## A\n")]).toEqual([
      'the-webhooks-own-certificate---validating-webhook-secret',
      'a',
      'a-1',
    ]);
  });
});
