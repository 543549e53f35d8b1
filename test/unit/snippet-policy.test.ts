import { describe, expect, it } from 'vitest';
import { parseNginxStatements, tokenizeNginx, variablesIn } from '../../src/model/nginx-tokens.js';
import { checkSnippetDirectives, type SnippetContext } from '../../src/model/snippet-policy.js';

const ok = <T>(r: { ok: true; value: T } | { ok: false; message: string }) => (r.ok ? r.value : `error: ${r.message}`);

describe('tokenizeNginx', () => {
  it('reads words, quoted strings with nginx escapes, punctuation, and drops comments', () => {
    expect(ok(tokenizeNginx(`a "b \\"c\\" \\\\ \\x" 'd\\'e';# gone\n f\\.g \${h}i{}`))).toEqual([
      { kind: 'word', value: 'a', quoted: false },
      { kind: 'word', value: 'b "c" \\ \\x', quoted: true },
      { kind: 'word', value: "d'e", quoted: true },
      { kind: ';' },
      { kind: 'word', value: 'f\\.g', quoted: false },
      { kind: 'word', value: '${h}i', quoted: false },
      { kind: '{' },
      { kind: '}' },
    ]);
  });

  it.each([
    ['add_header "X;', 'unterminated double-quoted'],
    ["add_header 'X;", 'unterminated single-quoted'],
    ['add_header a"b c;', 'a quote inside a word'],
    ['add_header "a"b;', 'right after a closing quote'],
    ['return 200 a};', "'}' inside a word"],
    ['x'.repeat(16385), 'longer than 16384'],
  ])('refuses %j', (text, message) => expect(ok(tokenizeNginx(text))).toContain(message));

  it('takes linear time: a long snippet of quotes and escapes is read at once', () => {
    const text = `add_header X "${'\\"'.repeat(8000)}";`;
    expect(ok(tokenizeNginx(text))).toHaveLength(4);
  });
});

describe('parseNginxStatements and variablesIn', () => {
  it('gives plain directives, and refuses blocks and stray braces', () => {
    expect(ok(parseNginxStatements('gzip on;  expires 1h ;'))).toEqual([
      { name: 'gzip', args: ['on'] },
      { name: 'expires', args: ['1h'] },
    ]);
    expect(ok(parseNginxStatements('if ($x) { return 403; }'))).toContain('opens a block');
    expect(ok(parseNginxStatements('} server { listen 1;'))).toContain('closes no block');
    expect(ok(parseNginxStatements('gzip on'))).toContain("no ';'");
    expect(ok(parseNginxStatements('"gzip" on;'))).toContain('not a directive name');
  });

  it('names the variables of a value, refusing a bare $ and an unterminated ${', () => {
    expect(ok(variablesIn('a$host${uri}b$1$http_x_y'))).toEqual(['host', 'uri', '1', 'http_x_y']);
    expect(ok(variablesIn('${uri'))).toContain("missing its closing '}'");
    expect(ok(variablesIn('100$'))).toContain('must start a variable name');
  });
});

const check = (text: string, context: SnippetContext = 'location') => ok(checkSnippetDirectives(text, context));

describe('checkSnippetDirectives', () => {
  it('accepts the common snippets, keeping the arguments as nginx reads them', () => {
    expect(check(`add_header X-Frame-Options "DENY" always;\nmore_set_headers "X: 1";`)).toContain(
      'its module is not installed with this nginx (Debian: libnginx-mod-http-headers-more-filter)',
    );
    expect(
      check(
        [
          'add_header X-Frame-Options "DENY" always;',
          'add_header Cache-Control "no-store, max-age=0";',
          'proxy_set_header X-User $http_x_user;',
          'proxy_hide_header X-Powered-By;',
          'expires 1h;',
          'gzip off;',
          'client_max_body_size 8m;',
          'proxy_read_timeout 120s;',
          'rewrite ^/old/(.*)$ /new/$1 break;',
          'rewrite ^/moved$ https://example.com/ permanent;',
          'return 403;',
          'allow 10.0.0.0/8;',
          'deny all;',
          "sub_filter '</head>' '<meta x></head>';",
        ].join('\n'),
      ),
    ).toEqual([
      { name: 'add_header', args: ['X-Frame-Options', 'DENY', 'always'] },
      { name: 'add_header', args: ['Cache-Control', 'no-store, max-age=0'] },
      { name: 'proxy_set_header', args: ['X-User', '$http_x_user'] },
      { name: 'proxy_hide_header', args: ['X-Powered-By'] },
      { name: 'expires', args: ['1h'] },
      { name: 'gzip', args: ['off'] },
      { name: 'client_max_body_size', args: ['8m'] },
      { name: 'proxy_read_timeout', args: ['120s'] },
      { name: 'rewrite', args: ['^/old/(.*)$', '/new/$1', 'break'] },
      { name: 'rewrite', args: ['^/moved$', 'https://example.com/', 'permanent'] },
      { name: 'return', args: ['403'] },
      { name: 'allow', args: ['10.0.0.0/8'] },
      { name: 'deny', args: ['all'] },
      { name: 'sub_filter', args: ['</head>', '<meta x></head>'] },
    ]);
    expect(check('add_header X-Served-By edge;', 'server')).toEqual([
      { name: 'add_header', args: ['X-Served-By', 'edge'] },
    ]);
  });

  // finding 6: each thing a tenant's snippet did under the blocklist is now refused, naming the directive.
  it.each<[string, SnippetContext, string]>([
    ['server_name ~.*;', 'server', 'the directive server_name is not allowed: it would claim other hosts'],
    ['listen 127.0.0.1:9999;', 'server', 'the directive listen is not allowed: it would open a socket'],
    ['stub_status;', 'location', 'the directive stub_status is not allowed'],
    ['client_body_in_file_only on;', 'location', 'the directive client_body_in_file_only is not allowed'],
    ['add_before_body /_external-auth-x;', 'location', 'the directive add_before_body is not allowed'],
    [
      'rewrite ^ /_external-auth-x last;',
      'location',
      'the directive rewrite: rewrite needs the flag break, redirect or permanent',
    ],
    ['rewrite ^ /_external-auth-x;', 'location', 'the directive rewrite: rewrite needs the flag break'],
    ['satisfy any;', 'server', 'the directive satisfy is not allowed'],
    ['underscores_in_headers on;', 'server', 'the directive underscores_in_headers is not allowed'],
    [
      'add_header X "${uri";',
      'location',
      "the directive add_header: \"${uri\": the '${uri' is missing its closing '}'",
    ],
  ])('finding 6: refuses %j in a %s snippet', (text, context, message) =>
    expect(check(text, context)).toContain(`error: ${message}`),
  );

  it.each<[string, SnippetContext, string]>([
    ['add_header Set-Cookie "s=1";', 'server', 'may not add Set-Cookie to every Ingress on the host'],
    ['return 200;', 'server', 'not on the server-snippet allow-list'],
    ['rewrite ^ /x permanent;', 'server', 'not on the server-snippet allow-list'],
    ['add_header X $ia_hsts;', 'location', 'the variable $ia_hsts is not one snippets may read'],
    ['add_header X $proxy_upstream_name;', 'location', 'the variable $proxy_upstream_name'],
    ['add_header X "a\\nb";', 'location', 'printable ASCII'],
    ['add_header X_Y 1;', 'location', 'not a header name'],
    ['add_header X 1 never;', 'location', 'is not always'],
    ['add_header X;', 'location', 'takes name value [always] (1 argument given)'],
    ['proxy_set_header Host evil;', 'location', 'the controller sets Host itself'],
    ['gzip on; gzip off;', 'location', 'appears twice'],
    ['return 302 https://x/ extra;', 'location', 'takes code'],
    ['return 99;', 'location', 'not a status code'],
    ['rewrite (?i)^/x /y break;', 'location', 'named group would set a variable'],
    ['rewrite ^/( /x break;', 'location', "a '(' without its ')'"],
    ['try_files $uri /index.html;', 'location', 'the directive try_files is not allowed'],
    ['error_page 404 = /_external-auth-x;', 'location', 'the directive error_page is not allowed'],
    ['proxy_pass http://10.0.0.1;', 'location', 'the directive proxy_pass is not allowed'],
    ['content_by_lua_block x;', 'location', 'the directive content_by_lua_block is not allowed'],
    ['set $proxy_upstream_name x;', 'location', 'the directive set is not allowed'],
    ['alias /etc/;', 'location', 'the directive alias is not allowed'],
  ])('refuses %j in a %s snippet', (text, context, message) => expect(check(text, context)).toContain(message));

  it('accepts an empty or comment-only snippet as no directive (ingress-nginx serves its locations)', () => {
    for (const text of ['', '   \n', '\n  # bla_by_lua', '# a; b;\n# c'])
      for (const context of ['location', 'server'] as const)
        expect(checkSnippetDirectives(text, context)).toEqual({ ok: true, value: [] });
  });

  it('refuses a directive an annotation beside it also renders (nginx would refuse the duplicate)', () => {
    const checked = checkSnippetDirectives('client_max_body_size 1m;', 'location', {
      annotated: (key) => key === 'proxy-body-size',
    });
    expect(ok(checked)).toContain('also set by the annotation proxy-body-size');
  });
});

describe('checkSnippetDirectives agrees with what nginx accepts', () => {
  // Each of these passes a JavaScript check but makes nginx -t fail, which would stall every tenant's reload.
  it.each([
    ["sub_filter '' x;", 'may not be empty'],
    ['rewrite ^/a[] /b break;', 'an empty class'],
    ['rewrite [\\d-z] /b break;', 'a range from a class escape (PCRE2 refuses it'],
    ['client_max_body_size 9999999999g;', 'is not a size'],
  ])('refuses %j', (text, message) => expect(check(text)).toContain(message));
});

const MORE = { headersMore: '/usr/lib/nginx/modules/ngx_http_headers_more_filter_module.so' };
const more = (text: string, context: SnippetContext = 'location') =>
  ok(checkSnippetDirectives(text, context, { modules: MORE }));

describe('headers-more directives (with the module installed)', () => {
  it.each([
    ['more_set_headers "X-Frame-Options: DENY";', 'location'],
    ["more_set_headers -s '404 500' -t 'text/html text/plain' 'X-Error: $status' 'X-Other:';", 'location'],
    ['more_clear_headers Server X-Powered-By X-Hidden-*;', 'location'],
    ["more_clear_headers -s 404 'X-Debug';", 'server'],
    ['more_set_headers "X-Frame-Options: SAMEORIGIN";', 'server'],
    ["more_set_input_headers -r 'X-User: $http_x_alias';", 'location'],
    ["more_set_input_headers -t 'text/plain' 'X-Kind: plain';", 'location'],
    ['more_clear_input_headers X-Debug-* Cookie;', 'location'],
  ] as const)('accepts %s in %s', (text, context) => {
    expect(more(text, context)).toEqual(expect.any(Array));
  });

  it.each([
    ['more_set_headers "Set-Cookie: a=b";', 'server', 'may not change set-cookie for every Ingress'],
    ['more_clear_headers Strict-*;', 'server', 'may not change strict-transport-security'],
    ['more_set_input_headers "Host: other.example";', 'location', 'the controller sets host itself'],
    ['more_clear_input_headers X-Forwarded-*;', 'location', 'the controller sets x-forwarded-for itself'],
    ["more_set_headers -s 'abc' 'X: 1';", 'location', 'is not a list of status codes'],
    ["more_set_headers -t 'text/html; x' 'X: 1';", 'location', 'is not a list of MIME types'],
    ["more_set_headers -x 1 'X: 1';", 'location', '-x is not an option here'],
    ["more_set_headers -r 'X: 1';", 'location', '-r is not an option here'],
    ['more_set_headers -s 404;', 'location', 'no header given'],
    ['more_set_headers "Bad Name: 1";', 'location', 'is not a header name'],
    ['more_set_headers "X: $ia_hsts";', 'location', 'is not one snippets may read'],
    ['more_set_input_headers "X: 1";', 'server', 'is not on the server-snippet allow-list'],
    ['more_set_headers "X-Name \n";', 'location', 'holds a character other than printable ASCII'],
  ] as const)('refuses %s in %s', (text, context, message) => {
    expect(more(text, context)).toContain(message);
  });
});
