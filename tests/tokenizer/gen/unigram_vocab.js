// A small SentencePiece-style Unigram vocabulary for the XLM-R-like test
// tokenizer: pieces are "▁"-prefixed words and their substrings (up to 8
// characters) from the given corpus, every character seen, the most useful
// multi-character pieces kept (frequency x length), each scored with its log
// relative frequency, sorted best first as sentencepiece writes them. Real
// XLM-R vocabularies come from EM training; the tokenizer under test only
// needs pieces and log-probability scores of the same form, including the
// ties that the Viterbi search must break like the reference.
'use strict';

function trainUnigram(_tk, _normalizer, _metaspace, corpus, size) {
  const words = new Map();
  for (const line of corpus) {
    const text = line.normalize('NFKC').replace(/ {2,}/g, ' ').trim();
    for (const w of text.split(' ')) {
      if (!w) continue;
      const key = '\u2581' + w;
      words.set(key, (words.get(key) || 0) + 1);
    }
  }
  const counts = new Map();
  const chars = new Map();
  for (const [w, n] of words) {
    const cps = [...w];
    for (let i = 0; i < cps.length; i++) {
      chars.set(cps[i], (chars.get(cps[i]) || 0) + n);
      let piece = cps[i];
      for (let j = i + 1; j < cps.length && j - i < 8; j++) {
        piece += cps[j];
        counts.set(piece, (counts.get(piece) || 0) + n);
      }
    }
  }
  const multi = [...counts.entries()]
    .filter(([, n]) => n >= 2)
    .sort((a, b) => b[1] * [...b[0]].length - a[1] * [...a[0]].length || (a[0] < b[0] ? -1 : 1))
    .slice(0, Math.max(0, size - chars.size));
  const all = [...chars.entries(), ...multi];
  const total = all.reduce((t, [, n]) => t + n, 0);
  return all
    .map(([p, n]) => [p, Math.round(Math.log(n / total) * 1e4) / 1e4])
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
}

module.exports = { trainUnigram };
