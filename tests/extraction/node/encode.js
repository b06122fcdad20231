// Whole encodings and decoder outputs from the official Rust tokenizer (npm
// `tokenizers`), for tests/extraction/make_goldens.py.
//
// Reads {"tokenizer": "path/to/tokenizer.json", "inputs": [[text, pair|null], ...],
//        "decode": [[token, ...], ...]}
// on stdin and writes
//   {"encodings": [{ids, tokens, type_ids, offsets, word_ids, sequence_ids, special}, ...],
//    "decoded": [string, ...]}
// on stdout. Truncation and padding are switched off: the pipelines'
// windows are cut from the whole encoding by the Python side, because
// tokenizers 0.23.x stops tokenizing at max_length when truncation is on and
// so loses the overflow windows (huggingface/tokenizers#2091). Offsets are in
// characters (Unicode code points), as the Python binding gives them to the
// transformers pipelines. `decoded` is the tokenizer's decoder applied to
// each token list: what transformers' convert_tokens_to_string returns.
'use strict';
const tk = require('tokenizers');

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const t = tk.Tokenizer.fromFile(req.tokenizer);
  t.disableTruncation();
  t.disablePadding();
  const encodings = [];
  for (const [text, pair] of req.inputs || []) {
    const e = await t.encode(text, pair === null ? null : pair);
    encodings.push({
      ids: e.getIds(),
      tokens: e.getTokens(),
      type_ids: e.getTypeIds(),
      offsets: e.getOffsets(),
      word_ids: e.getWordIds(),
      sequence_ids: e.getSequenceIds(),
      special: e.getSpecialTokensMask(),
    });
  }
  const decoder = t.getDecoder();
  const decoded = [];
  for (const tokens of req.decode || []) {
    decoded.push(decoder ? await decoder.decode(tokens) : tokens.join(' '));
  }
  process.stdout.write(JSON.stringify({ encodings, decoded }));
}

main().catch((e) => { console.error(e); process.exit(1); });
