// Asks the reference (Rust `tokenizers` through its napi binding) how it treats
// every code point, one BertNormalizer step and the BertPreTokenizer at a time.
//
//   node unicode_probe.js <unicode_ref.txt> [<unicode_ref.tsv>]
//
// writes
//   unicode_ref.txt  one line per block of 1024 code points with an FNV-1a
//                    hash per property (tests/test_tokenizer_unicode.c
//                    recomputes them from the C implementation)
//   unicode_ref.tsv  the full per-code-point listing (not committed: input of
//                    tests/tokenizer/unicode_skew_gen.c)
'use strict';
const fs = require('fs');
const tk = require('tokenizers');

const refPath = process.argv[2];
const tsvPath = process.argv[3];
if (!refPath) {
  console.error('usage: node unicode_probe.js <unicode_ref.txt> [<unicode_ref.tsv>]');
  process.exit(2);
}

const only = (opts) => tk.bertNormalizer(Object.assign(
  { cleanText: false, handleChineseChars: false, stripAccents: false, lowercase: false }, opts));
const clean = only({ cleanText: true });
const chinese = only({ handleChineseChars: true });
const strip = only({ stripAccents: true });
const lower = only({ lowercase: true });
const pre = tk.bertPreTokenizer();

const cps = (s) => [...s].map((c) => c.codePointAt(0));

// Properties of one code point, in the order the C test hashes them.
function props(cp) {
  const c = String.fromCodePoint(cp);
  // 'a' on both sides: a lone character can vanish, and strip/lowercase
  // never touch 'a' nor combine with it under NFD.
  const s = 'a' + c + 'a';
  const rc = clean.normalizeString(s);
  const cleanV = rc === 'aa' ? 1 : rc === 'a a' ? 2 : rc === s ? 0 : -1;
  const p = pre.preTokenizeString(s).map((x) => x[0]);
  let preV = -1;
  if (p.length === 2 && p[0] === 'a' && p[1] === 'a') preV = 1;
  else if (p.length === 3 && p[1] === c) preV = 2;
  else if (p.length === 1 && p[0] === s) preV = 0;
  const rh = chinese.normalizeString(s);
  const chineseV = rh === s ? 0 : rh === 'a ' + c + ' a' ? 1 : -1;
  const stripV = cps(strip.normalizeString(s)).slice(1, -1);
  const lowerV = cps(lower.normalizeString(s)).slice(1, -1);
  if (cleanV < 0 || preV < 0 || chineseV < 0)
    throw new Error(`unexpected behaviour for U+${cp.toString(16)}: ${JSON.stringify([rc, p, rh])}`);
  return [cleanV, preV, chineseV, stripV, lowerV];
}

// FNV-1a over the little-endian bytes of 32-bit words.
function fnvWord(h, w) {
  for (let i = 0; i < 4; i++) h = Math.imul(h ^ ((w >>> (8 * i)) & 0xff), 16777619) >>> 0;
  return h;
}

const BLOCK = 1024;
const lines = [];
const tsv = [];
for (let block = 0; block < 0x110000 / BLOCK; block++) {
  const h = [2166136261, 2166136261, 2166136261, 2166136261, 2166136261];
  for (let cp = block * BLOCK; cp < (block + 1) * BLOCK; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const v = props(cp);
    for (let k = 0; k < 3; k++) h[k] = fnvWord(h[k], v[k]);
    for (let k = 3; k < 5; k++) {
      h[k] = fnvWord(h[k], v[k].length);
      for (const x of v[k]) h[k] = fnvWord(h[k], x);
    }
    const same = (l) => l.length === 1 && l[0] === cp;
    if (v[0] || v[1] || v[2] || !same(v[3]) || !same(v[4]))
      tsv.push([cp, v[0], v[1], v[2], v[3].join(' '), v[4].join(' ')].map(String).join('\t'));
  }
  lines.push([block * BLOCK, ...h].map((x) => x.toString(16)).join(' '));
}
const header = '# tokenizers@' + require('tokenizers/package.json').version +
  ': per block of 1024 code points, FNV-1a of clean_text, pre-tokenizer, chinese, strip_accents, lowercase\n';
fs.writeFileSync(refPath, header + lines.join('\n') + '\n');
if (tsvPath) fs.writeFileSync(tsvPath, tsv.join('\n') + '\n');
console.error(`unicode_probe: ${lines.length} blocks, ${tsv.length} non-trivial code points`);
