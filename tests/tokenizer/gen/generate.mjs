// Generates the tokenizer parity data in tests/data/tokenizer/ from the
// reference, Hugging Face's Rust `tokenizers` (npm `tokenizers`, its napi
// binding), and lists where transformers.js departs from it.
//
//   npm install --ignore-scripts && node generate.mjs [name ...]
//
// With names, only those tokenizers are regenerated (summary.json keeps the
// others' entries).
//
// For each tokenizer it copies the tokenizer files the C test loads, then
// writes <name>.jsonl, one case per line:
//   text, pair?          the input(s)
//   ml?, side?, nospecial?, file_trunc?
//                        options: max_length with truncation, "left", no
//                        template specials, or the file's own truncation
//   ids, types, offsets  ids, type ids as a digit string, byte offsets
//                        [start0, stop0, start1, ...] into text or pair
//   special, seq         special-token mask ("1001"), sequence ("x00x", x: none)
//   untrunc?             token count before truncation
//   dec, dec_skip?       transformers decode (skip_special_tokens false/true)
//   dec_rust, dec_rust_skip?  `tokenizers` decode (no clean_up_tokenization)
//   tjs_ids?, tjs_reason? transformers.js ids where they differ, and why
import fs from 'fs';
import os from 'os';
import path from 'path';
import { createRequire } from 'module';
import { fileURLToPath } from 'url';
import { AutoTokenizer, env } from '@huggingface/transformers';

const require = createRequire(import.meta.url);
const tk = require('tokenizers');
const hardCases = require('./hard_cases.js');
const { buildCharsmap } = require('./charsmap.js');
const { trainUnigram } = require('./unigram_vocab.js');

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '../../..');
const OUT = path.join(REPO, 'tests/data/tokenizer');
const SHARED = process.env.BERT_SHARED_DATA || path.resolve(REPO, '../shared/data');

const TOKENIZERS = [
  {
    name: 'minilm', layout: 'json', sst: 'all', wiki: 350, fileTrunc: true,
    files: {
      'tokenizer.json': 'all-MiniLM-L6-v2-hub/tokenizer.json',
      'tokenizer_config.json': 'all-MiniLM-L6-v2-hub/tokenizer_config.json',
      'special_tokens_map.json': 'all-MiniLM-L6-v2-hub/special_tokens_map.json',
    },
  },
  {
    name: 'bert-base-uncased', layout: 'vocab', sst: 2000, wiki: 450,
    files: { 'vocab.txt': 'bert-base-uncased/vocab.txt', 'tokenizer_config.json': 'bert-base-uncased/tokenizer_config.json' },
  },
  {
    name: 'bert-base-cased', layout: 'vocab', sst: 2000, wiki: 450,
    files: { 'vocab.txt': 'bert-base-cased/vocab.txt', 'tokenizer_config.json': 'bert-base-cased/tokenizer_config.json' },
  },
  {
    name: 'bert-base-chinese', layout: 'vocab', sst: 2000, wiki: 450,
    files: { 'vocab.txt': 'bert-base-chinese/vocab.txt', 'tokenizer_config.json': 'bert-base-chinese/tokenizer_config.json' },
  },
  {
    name: 'bert-base-chinese-json', layout: 'json', sst: 2000, wiki: 450,
    files: { 'tokenizer.json': 'bert-base-chinese/tokenizer.json', 'tokenizer_config.json': 'bert-base-chinese/tokenizer_config.json' },
  },
  // Not a real checkpoint: the less common options, each checked against the
  // reference (see customJson).
  { name: 'custom', layout: 'custom', sst: 500, wiki: 100, files: {} },
  // RoBERTa's real vocab.json + merges.txt; the reference is what
  // transformers' RobertaConverter builds from them (robertaJson).
  {
    name: 'roberta-base', layout: 'roberta', sst: 2000, wiki: 450, noTjs: true, cleanup: true,
    files: { 'vocab.json': 'roberta-base/vocab.json', 'merges.txt': 'roberta-base/merges.txt' },
  },
  // ModernBERT's pipeline and special tokens over RoBERTa's BPE (modernJson).
  { name: 'modernbert', layout: 'modernbert', sst: 2000, wiki: 450, noTjs: true, files: {} },
  // XLM-R's pipeline: Precompiled charsmap, Metaspace, Unigram (xlmrJson).
  { name: 'xlmr', layout: 'xlmr', sst: 2000, wiki: 450, noTjs: true, files: {} },
  // Unigram's remaining options (optionsUnigramJson).
  { name: 'unigram-options', layout: 'unigram-options', sst: 500, wiki: 100, noTjs: true, files: {} },
  // Real tokenizer.json files read in place from the shared data (the C
  // test reads them there too, so nothing is copied or committed), with
  // fewer long paragraphs and SST lines cut to their first 40 characters
  // (at a space) and half the STS pairs to keep the .jsonl near 1 MB.
  // all-mpnet-base-v2: BertNormalizer + WordPiece under RobertaProcessing
  // (<s> A </s></s> B </s>), <mask> with lstrip.
  // nomic-embed-text-v1.5 and jina-embeddings-v2-base-en: MiniLM's pipeline
  // (jina's vocabulary has 6 more tokens): their lines must equal minilm's,
  // which is checked here and nothing is written.
  { name: 'nomic', shared: 'nomic-embed-text-v1.5', sameAs: 'minilm' },
  { name: 'jina', shared: 'jina-embeddings-v2-base-en', sameAs: 'minilm' },
  // DeBERTa-v3's pipeline (debertaJson): XLM-R's Unigram pieces under the
  // layout transformers' DebertaV2Converter writes; lines kept short as mpnet's.
  { name: 'deberta', layout: 'deberta', sst: 2700, sstClip: 40, sts: 150, wiki: 60, wikiLong: 3, noTjs: true, files: {} },
  { name: 'mpnet', layout: 'json', shared: 'all-mpnet-base-v2', sst: 2700, sstClip: 40, sts: 150, wiki: 60, wikiLong: 3, noTjs: true, files: {} },
];

// Cases for the byte-level and SentencePiece tokenizers: <mask> with spaces
// around it (lstrip), contractions and whitespace runs (GPT-2's pattern),
// SentencePiece's own markers, NFC/NFKC material.
const EXTRA_CASES = [
  ['The capital of France is <mask>.'], ['Hello <mask>!'], ['  <mask>  '], ['a<mask>b'],
  ['<mask><mask> <mask>   <mask>'], ['<mask>'], [' <mask>'], ['x\t<mask>\ny'],
  ['[MASK] and <mask> and [mask] and <MASK>'], ['<s> </s> <pad> <unk> [CLS] [SEP]'],
  ["I'm can't we'll they've she'd it's 'S 'LL 'Re O'Neil rock'n'roll"],
  ["''s ' s 'ss ' ''"], ['a  b   c    d\t\te\n\nf \n g'], ['   leading and trailing   '],
  ['\u00A0nbsp\u00A0\u00A0runs\u3000ideographic\u2003em'], ['12345 3.14159 1,000,000 2nd 3rd'],
  ['e\u0301 vs \u00E9, A\u030A vs \u00C5, \u1100\u1161\u11A8 vs \uAC01'],
  ['\u00BD \u2460 \uFB01 \u2168 \uFF71\uFF72 \u3250 \u33A1 \u2122'],
  ['\u2581 already \u2581\u2581 meta \u2581x'], ['tab\tand\u000bvertical\u000cfeed\rcr'],
  ['emoji \u{1F469}\u200D\u{1F469}\u200D\u{1F467} \u{1F44D}\u{1F3FD} \u{1F1EB}\u{1F1F7}'],
  ['\u0000nul\u0001ctl\u007F del \u200Bzw\uFEFFbom'],
  ['|||IP_ADDRESS||| |||EMAIL_ADDRESS||| <|endoftext|> <|padding|>'],
  ['code:    indented\n        more\n\tdone'], ['Hello <mask>', 'world <mask> !'],
  ['  spaced pair  ', '  second  '],
];

// A small tokenizer.json exercising what the real ones leave out: added
// tokens with lstrip/rstrip, single_word and normalized matching, a cut-down
// vocabulary (many [UNK] and ## pieces), max_input_chars_per_word 20,
// strip_accents false with lowercase, no Chinese handling, BertProcessing,
// a decoder without cleanup.
function customJson() {
  const base = JSON.parse(fs.readFileSync(path.join(SHARED, 'all-MiniLM-L6-v2-hub/tokenizer.json'), 'utf8'));
  const vocab = {};
  for (const [t, id] of Object.entries(base.model.vocab)) if (id < 8000) vocab[t] = id;
  const added = (id, content, o) => Object.assign(
    { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false }, o);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      ...base.added_tokens,
      added(8000, '<ent>', { lstrip: true, rstrip: true, special: true }),
      added(8001, 'Hello World', { normalized: true }),
      added(8002, 'ony', { single_word: true }),
      added(8003, '新词', { normalized: true }),
      added(8004, '<ent2>', { rstrip: true }),
    ],
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: false, strip_accents: false, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: { type: 'BertProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101] },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: false },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 20, vocab },
  };
}

// What transformers' RobertaConverter builds from vocab.json + merges.txt
// (RobertaTokenizer defaults: add_prefix_space false, trim_offsets true; the
// special tokens registered as non-normalized special tokens, <mask> with
// lstrip).
function robertaJson(dir) {
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'vocab.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(dir, 'merges.txt'), 'utf8').split('\n').slice(1, -1)
    .map((l) => l.split(/\s+/).filter(Boolean).join(' '));
  const special = (content, o = {}) => Object.assign({
    id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }, o);
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [special('<s>'), special('<pad>'), special('</s>'), special('<unk>'), special('<mask>', { lstrip: true })],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true, add_prefix_space: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '',
      fuse_unk: false, byte_fallback: false, vocab, merges,
    },
  };
}

// ModernBERT's tokenizer.json layout (NFC, ByteLevel without prefix space,
// [CLS] $A [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1, no offset trimming) and its
// added tokens (|||IP_ADDRESS|||-style markers, runs of 2 to 24 spaces as
// normalized non-special tokens, [UNK] [CLS] [SEP] [PAD], [MASK] with lstrip,
// [unused0..9]) over RoBERTa's vocabulary, merges in the [a, b] form.
function modernJson() {
  const base = robertaJson(path.join(SHARED, 'roberta-base'));
  const vocab = base.model.vocab;
  let next = Math.max(...Object.values(vocab)) + 1;
  const added = [];
  // Ids as `tokenizers` assigns them: the vocabulary's when it has the
  // token (<|endoftext|> is in RoBERTa's), otherwise the next free one.
  const add = (content, o = {}) => added.push(Object.assign({
    id: content in vocab ? vocab[content] : next++, content,
    single_word: false, lstrip: false, rstrip: false, normalized: true, special: false,
  }, o));
  add('|||IP_ADDRESS|||');
  add('<|padding|>', { normalized: false, special: true });
  for (let n = 24; n >= 2; n--) add(' '.repeat(n));
  add('|||EMAIL_ADDRESS|||');
  add('|||PHONE_NUMBER|||');
  add('<|endoftext|>', { normalized: false, special: true });
  const ids = {};
  for (const t of ['[UNK]', '[CLS]', '[SEP]', '[PAD]', '[MASK]']) {
    add(t, { normalized: false, special: true, lstrip: t === '[MASK]' });
    ids[t] = added[added.length - 1].id;
  }
  for (let i = 0; i < 10; i++) add(`[unused${i}]`);
  const sp = (id, type_id) => ({ SpecialToken: { id, type_id } });
  const seq = (id, type_id) => ({ Sequence: { id, type_id } });
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0)],
      pair: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0), seq('B', 1), sp('[SEP]', 1)],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [ids['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [ids['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: Object.assign({}, base.model, {
      unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null, ignore_merges: false,
      merges: base.model.merges.map((m) => m.split(' ')),
    }),
  };
}

// XLM-R's tokenizer.json layout as transformers' XLMRobertaConverter writes
// it (Precompiled charsmap then " {2,}" -> " ", Metaspace always/split,
// Unigram with <s> <pad> </s> <unk> first and <mask> last, <s> $A </s> /
// <s> $A </s> </s> $B </s>, Metaspace decoder). The charsmap comes from
// charsmap.js, the pieces and scores from unigram_vocab.js.
function xlmrJson() {
  const charsmap = buildCharsmap().toString('base64');
  const normalizer = {
    type: 'Sequence',
    normalizers: [
      { type: 'Precompiled', precompiled_charsmap: charsmap },
      { type: 'Replace', pattern: { Regex: ' {2,}' }, content: ' ' },
    ],
  };
  const metaspace = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'always', split: true };
  const corpus = [
    ...readLines('sst2/train.tsv').slice(1, 30001).map((l) => l.split('\t')[0]),
    ...wikiAll.slice(0, 3000),
    ...hardCases.flat(), ...hardCases.flat(), ...hardCases.flat(),
  ];
  const pieces = trainUnigram(tk, normalizer, metaspace, corpus, 8000);
  const vocab = [['<s>', 0], ['<pad>', 0], ['</s>', 0], ['<unk>', 0], ...pieces, ['<mask>', 0]];
  const special = (id, content, o = {}) => Object.assign({
    id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }, o);
  const sp = (id) => ({ SpecialToken: { id, type_id: 0 } });
  const seq = (id) => ({ Sequence: { id, type_id: 0 } });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [special(0, '<s>'), special(1, '<pad>'), special(2, '</s>'), special(3, '<unk>'),
      special(vocab.length - 1, '<mask>', { lstrip: true })],
    normalizer,
    pre_tokenizer: metaspace,
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('<s>'), seq('A'), sp('</s>')],
      pair: [sp('<s>'), seq('A'), sp('</s>'), sp('</s>'), seq('B'), sp('</s>')],
      special_tokens: {
        '<s>': { id: '<s>', ids: [0], tokens: ['<s>'] },
        '</s>': { id: '</s>', ids: [2], tokens: ['</s>'] },
      },
    },
    decoder: metaspace,
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
}

// Unigram with byte_fallback (<0x00>..<0xFF> pieces; the pieces of CJK and
// other scripts above U+2FFF removed so their characters take that path),
// Metaspace with prepend_scheme "first", NFD then a literal Replace and a
// one-character-run Regex Replace, <mask> without lstrip.
function optionsUnigramJson() {
  const j = xlmrJson();
  const vocab = j.model.vocab;
  const mask = vocab.pop();
  for (let b = 0; b < 256; b++) vocab.push([`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`, 0]);
  vocab.push(mask);
  j.model.byte_fallback = true;
  j.added_tokens[4] = Object.assign({}, j.added_tokens[4], { id: vocab.length - 1, lstrip: false });
  // Drop the pieces of rare scripts so their characters take the byte path.
  j.model.vocab = vocab.filter(([p]) => ![...p].some((c) => c.codePointAt(0) > 0x2FFF && c.codePointAt(0) < 0xE000) || p.startsWith('<'));
  j.added_tokens[4].id = j.model.vocab.length - 1;
  j.normalizer = { type: 'Sequence', normalizers: [{ type: 'NFD' }, { type: 'Replace', pattern: { String: '``' }, content: '"' }, { type: 'Replace', pattern: { Regex: '\u2581+' }, content: '_' }] };
  j.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: true };
  j.decoder = j.pre_tokenizer;
  return j;
}

// DeBERTa-v3's tokenizer.json as transformers' DebertaV2Converter writes it
// for the v3 spm (do_lower_case and split_by_punct false): Sequence[Strip,
// Precompiled, Replace(" {2,}")], Sequence[Metaspace] (prepend always),
// Unigram with [PAD] [CLS] [SEP] [UNK] first (unk_id 3) and [MASK] an added
// token past the pieces (deberta-v3's added_tokens.json: 128000, the spm
// size), `[CLS] $A [SEP]` / `[CLS] $A [SEP] $B:1 [SEP]:1`, Metaspace decoder.
function debertaJson() {
  const x = xlmrJson();
  const pieces = x.model.vocab.slice(4, -1);
  const vocab = [['[PAD]', 0], ['[CLS]', 0], ['[SEP]', 0], ['[UNK]', 0], ...pieces];
  const special = (id, content) => ({
    id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  });
  const sp = (id, type_id = 0) => ({ SpecialToken: { id, type_id } });
  const seq = (id, type_id = 0) => ({ Sequence: { id, type_id } });
  return {
    version: '1.0', truncation: null, padding: null,
    added_tokens: [special(0, '[PAD]'), special(1, '[CLS]'), special(2, '[SEP]'), special(3, '[UNK]'),
      special(vocab.length, '[MASK]')],
    normalizer: {
      type: 'Sequence',
      normalizers: [{ type: 'Strip', strip_left: true, strip_right: true }, ...x.normalizer.normalizers],
    },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [x.pre_tokenizer] },
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('[CLS]'), seq('A'), sp('[SEP]')],
      pair: [sp('[CLS]'), seq('A'), sp('[SEP]'), seq('B', 1), sp('[SEP]', 1)],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [1], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [2], tokens: ['[SEP]'] },
      },
    },
    decoder: x.decoder,
    model: { type: 'Unigram', unk_id: 3, vocab, byte_fallback: false },
  };
}

// transformers' clean_up_tokenization.
const cleanUp = (s) => s.replaceAll(' .', '.').replaceAll(' ?', '?').replaceAll(' !', '!').replaceAll(' ,', ',')
  .replaceAll(" ' ", "'").replaceAll(" n't", "n't").replaceAll(" 'm", "'m").replaceAll(" 's", "'s")
  .replaceAll(" 've", "'ve").replaceAll(" 're", "'re");

const CUSTOM_CASES = [
  ['visit <ent> Paris <ent>  now'], ['  <ent>  '], ['a<ent>b'], ['<ent><ent>'], ['<ent>'],
  ['x <ent2>   y <ent2>'], ['<ent2><ent>'], ['Hello World and hello world and HELLO WORLD'],
  ['say Hello  World'], ['HelloWorld hello worlds'], ['honey money ony tony ony!'], ['ony'],
  ['(ony)'], ['x ony y'], ['ony-ony ony_ony 1ony'], ['新词 新词新词 旧新词'], ['新 词'],
  ['İstanbul Straße ÉTÉ naïve'], ['a'.repeat(20)], ['a'.repeat(21)], ['abcdefghijklmnopqrstuvwxyz'],
  ['<ent>Hello World<ent>'], ['Hello World ony <ent> 新词', 'ony <ent2> hello world'],
];

// Deterministic choices (mulberry32).
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const seedOf = (s) => [...s].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0, 2166136261);
function sample(list, n, rand) {
  const a = list.slice();
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a.slice(0, Math.min(n, a.length));
}

// ---- source lines -------------------------------------------------------
const readLines = (p) => fs.readFileSync(path.join(SHARED, p), 'utf8').split('\n');
const sstDev = readLines('sst2/dev.tsv').slice(1).filter(Boolean).map((l) => l.split('\t')[0]);
const sstTest = readLines('sst2/test_labeled.tsv').slice(1).filter(Boolean).map((l) => l.split('\t')[1]);
const sst = [...sstDev, ...sstTest];
const wikiAll = readLines('wikitext-2-raw/wiki.test.raw')
  .map((l) => l.replace(/\n$/, ''))
  .filter((l) => l.trim() && !/^ = .* = $/.test(l));
const wikiShort = wikiAll.filter((l) => l.length <= 600);
const wikiLong = wikiAll.filter((l) => l.length > 1500 && l.length <= 4000);
const stsPairs = readLines('stsbenchmark/sts-dev.csv')
  .filter(Boolean)
  .map((l) => l.split('\t'))
  .filter((f) => f.length >= 7)
  .map((f) => [f[5], f[6]]);

// ---- the reference for the vocab.txt layout ------------------------------
// What transformers' BertConverter builds from BertTokenizer(vocab.txt, config).
function converterJson(dir) {
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer_config.json'), 'utf8'));
  const lines = fs.readFileSync(path.join(dir, 'vocab.txt'), 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const vocab = {};
  lines.forEach((t, i) => { vocab[t] = i; });
  const lower = cfg.do_lower_case ?? true;
  const specials = ['[UNK]', '[SEP]', '[PAD]', '[CLS]', '[MASK]'];
  const sp = (id, type_id) => ({ SpecialToken: { id, type_id } });
  const seq = (id, type_id) => ({ Sequence: { id, type_id } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((t) => ({
      id: vocab[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
    })),
    normalizer: {
      type: 'BertNormalizer', clean_text: true, handle_chinese_chars: cfg.tokenize_chinese_chars ?? true,
      strip_accents: cfg.strip_accents ?? null, lowercase: lower,
    },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0)],
      pair: [sp('[CLS]', 0), seq('A', 0), sp('[SEP]', 0), seq('B', 1), sp('[SEP]', 1)],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [vocab['[CLS]']], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [vocab['[SEP]']], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab },
  };
}

// ---- helpers --------------------------------------------------------------
// Code point offsets (what the binding returns) to UTF-8 byte offsets.
function byteIndex(s) {
  const idx = [0];
  let b = 0;
  for (const ch of s) {
    b += Buffer.byteLength(ch, 'utf8');
    idx.push(b);
  }
  return idx;
}

function explain(text, pair, singleWords) {
  const s = text + (pair ?? '');
  const reasons = [];
  if (singleWords.some((w) => s.includes(w)))
    reasons.push('single_word added token: transformers.js ignores single_word');
  const cps = [...s].map((c) => c.codePointAt(0));
  if (s.toLowerCase() !== [...s].map((c) => c.toLowerCase()).join(''))
    reasons.push('final sigma: JS toLowerCase() applies the context rule, Rust char::to_lowercase does not');
  if (cps.some((c) => c >= 0x20000 && c <= 0x2fa1f))
    reasons.push('CJK ideographs beyond the BMP: transformers.js does not isolate them');
  const newer = [0x890, 0x891, 0x8e2, 0x2e52, 0x11944, 0x13430, 0x1734, 0x111c9, 0x17d4, 0x17d5, 0x1b7d, 0x2e43];
  if (cps.some((c) => newer.includes(c)))
    reasons.push('Unicode tables: JS regexes use Unicode 15 categories, `tokenizers` older ones');
  if (pair === '')
    reasons.push('empty pair: transformers.js treats an empty text_pair as no pair');
  return reasons.length ? reasons.join('; ') : 'unexplained';
}

async function encodeRust(tok, c) {
  const e = await tok.encode(c.text, c.pair ?? null, { addSpecialTokens: !c.nospecial });
  const bt = byteIndex(c.text);
  const bp = c.pair != null ? byteIndex(c.pair) : null;
  const seqIds = e.getSequenceIds();
  const offsets = [];
  e.getOffsets().forEach(([s, t], i) => {
    const b = seqIds[i] === 1 ? bp : bt;
    if (seqIds[i] === null || seqIds[i] === undefined) offsets.push(s, t);
    else offsets.push(b[s], b[t]);
  });
  return {
    ids: e.getIds(),
    types: e.getTypeIds().join(''),
    offsets,
    special: e.getSpecialTokensMask().join(''),
    seq: seqIds.map((q) => (q === null || q === undefined ? 'x' : String(q))).join(''),
  };
}

// ---- main -----------------------------------------------------------------
env.allowRemoteModels = false;
const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'bert-tok-'));
env.localModelPath = tmpRoot;

// Every line of another tokenizer's .jsonl (less those cut by that file's
// own truncation) must come out of this tokenizer.json the same: ids, type
// ids, special masks and `tokenizers` decodes. Throws on the first that
// does not.
async function checkSameAs(spec) {
  const rust = tk.Tokenizer.fromString(fs.readFileSync(path.join(SHARED, spec.shared, 'tokenizer.json'), 'utf8'));
  rust.disablePadding();
  rust.disableTruncation();
  let n = 0;
  for (const line of fs.readFileSync(path.join(OUT, spec.sameAs + '.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const c = JSON.parse(line);
    if (c.file_trunc) continue;
    if (c.ml) rust.setTruncation(c.ml, { direction: c.side || 'right', strategy: 'LongestFirst' });
    const r = await encodeRust(rust, c);
    if (c.ml) rust.disableTruncation();
    const same = r.ids.join(',') === c.ids.join(',') && r.types === c.types && r.special === c.special
      && r.offsets.join(',') === c.offsets.join(',')
      && (c.dec_rust === undefined || ((await rust.decode(c.ids, false)) === c.dec_rust
        && (await rust.decode(c.ids, true)) === c.dec_rust_skip));
    if (!same) throw new Error(`${spec.name}: differs from ${spec.sameAs} on ${JSON.stringify(c.text).slice(0, 80)}`);
    n++;
  }
  console.error(`${spec.name}: ${n} lines of ${spec.sameAs}.jsonl identical`);
}

const only = process.argv.slice(2);
const summaryPath = path.join(OUT, 'summary.json');
const summary = only.length && fs.existsSync(summaryPath) ? JSON.parse(fs.readFileSync(summaryPath, 'utf8')) : [];
for (const spec of TOKENIZERS.filter((t) => !only.length || only.includes(t.name))) {
  if (spec.sameAs) {
    await checkSameAs(spec);
    continue;
  }
  const dir = spec.shared ? path.join(SHARED, spec.shared) : path.join(OUT, spec.name);
  if (!spec.shared) fs.mkdirSync(dir, { recursive: true });
  for (const [dst, src] of Object.entries(spec.files)) {
    fs.copyFileSync(path.join(SHARED, src), path.join(dir, dst));
    fs.chmodSync(path.join(dir, dst), 0o644);
  }

  // The reference: the tokenizer.json as is, or what the converter makes.
  let json;
  if (spec.layout === 'json') json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8'));
  else if (spec.layout === 'vocab') json = converterJson(dir);
  else if (spec.layout === 'roberta') json = robertaJson(dir);
  else {
    json = {
      custom: customJson, modernbert: modernJson, xlmr: xlmrJson,
      'unigram-options': optionsUnigramJson, deberta: debertaJson,
    }[spec.layout]();
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(json));
  }
  const tmpDir = path.join(tmpRoot, spec.name);
  fs.mkdirSync(tmpDir);
  fs.writeFileSync(path.join(tmpDir, 'tokenizer.json'), JSON.stringify(json));
  for (const f of ['tokenizer_config.json', 'special_tokens_map.json'])
    if (fs.existsSync(path.join(dir, f))) fs.copyFileSync(path.join(dir, f), path.join(tmpDir, f));
  if (spec.layout === 'custom')
    fs.writeFileSync(path.join(tmpDir, 'tokenizer_config.json'), '{"tokenizer_class": "BertTokenizer", "clean_up_tokenization_spaces": false}');
  const rust = tk.Tokenizer.fromString(JSON.stringify(json));
  rust.disablePadding();
  rust.disableTruncation();
  const rustFileTrunc = tk.Tokenizer.fromString(JSON.stringify(json));
  rustFileTrunc.disablePadding();
  const tjs = spec.noTjs ? null : await AutoTokenizer.from_pretrained(spec.name, { local_files_only: true });
  const singleWords = json.added_tokens.filter((t) => t.single_word).map((t) => t.content);

  // The cases.
  const rand = rng(seedOf(spec.name));
  const cases = [];
  const sstLines = spec.sst === 'all' ? sst : sample(sst, spec.sst, rand);
  const clip = (t) => (spec.sstClip && t.length > spec.sstClip
    ? t.slice(0, Math.max(t.lastIndexOf(' ', spec.sstClip), 1)) : t);
  for (const t of sstLines) cases.push({ text: clip(t), src: 'sst2' });
  for (const t of sample(wikiShort, spec.wiki, rand)) cases.push({ text: t, src: 'wikitext' });
  for (const t of sample(wikiLong, spec.wikiLong ?? 10, rand)) cases.push({ text: t, src: 'wikitext-long' });
  for (const h of hardCases) cases.push(h.length > 1 ? { text: h[0], pair: h[1], src: 'hard' } : { text: h[0], src: 'hard' });
  if (spec.noTjs)
    for (const h of EXTRA_CASES) cases.push(h.length > 1 ? { text: h[0], pair: h[1], src: 'hard' } : { text: h[0], src: 'hard' });
  if (spec.layout === 'custom')
    for (const h of CUSTOM_CASES) cases.push(h.length > 1 ? { text: h[0], pair: h[1], src: 'custom' } : { text: h[0], src: 'custom' });
  for (const [a, b] of sample(stsPairs, spec.sts ?? (spec.layout === 'custom' ? 100 : 300), rand)) cases.push({ text: a, pair: b, src: 'sts-pair' });
  const truncSources = sample([...wikiShort, ...sst], 120, rand);
  truncSources.forEach((t, i) => {
    const ml = [3, 4, 5, 8, 16, 32, 64][i % 7];
    const side = i % 2 ? 'left' : 'right';
    const c = { text: t, ml, side, src: 'truncation' };
    if (i % 3 === 0) c.pair = sample(sst, 1, rand)[0];
    if (i % 5 === 4) {
      c.nospecial = true;
      c.ml = Math.max(c.ml, 1);
    }
    cases.push(c);
  });
  // Pairs of multi-piece words, added tokens and punctuation under tight
  // limits: where the reference's truncation is least obvious.
  const gridWords = ['the', 'unaffable', 'a', 'antidisestablishmentarianism', 'xq', ',', 'qzxv', '[MASK]', 'Straße', '中文', '!?'];
  if (spec.layout === 'custom') gridWords.push('<ent>', 'Hello World', 'ony', '新词');
  if (spec.noTjs) gridWords.push('<mask>', '[MASK]', "it's", '  ', '\u00BD');
  for (let i = 0; i < 150; i++) {
    const words = (n) => Array.from({ length: n }, () => gridWords[Math.floor(rand() * gridWords.length)]).join(' ');
    const nospecial = rand() < 0.3;
    cases.push({
      text: words(Math.floor(rand() * 12)), pair: words(Math.floor(rand() * 12)),
      ml: (nospecial ? 1 : 3) + Math.floor(rand() * 12), side: rand() < 0.5 ? 'left' : 'right',
      nospecial, src: 'truncation-grid',
    });
  }
  if (spec.fileTrunc) {
    for (const t of sample(wikiAll.filter((l) => l.length > 700), 60, rand)) cases.push({ text: t, file_trunc: true, src: 'file-truncation' });
    for (const [a, b] of sample(stsPairs, 20, rand)) cases.push({ text: a + ' ' + sample(wikiShort, 1, rand)[0], pair: b, file_trunc: true, src: 'file-truncation' });
  }

  const lines = [];
  const counts = { lines: 0, pairs: 0, truncated: 0, tjsDepart: {} };
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i];
    let r;
    if (c.ml) {
      rust.setTruncation(c.ml, { direction: c.side, strategy: 'LongestFirst' });
      r = await encodeRust(rust, c);
      rust.disableTruncation();
      r.untrunc = (await encodeRust(rust, c)).ids.length;
    } else if (c.file_trunc) {
      r = await encodeRust(rustFileTrunc, c);
      r.untrunc = (await encodeRust(rust, c)).ids.length;
    } else {
      r = await encodeRust(rust, c);
    }
    const out = { text: c.text };
    if (c.pair != null) out.pair = c.pair;
    if (c.ml) out.ml = c.ml;
    if (c.side === 'left') out.side = 'left';
    if (c.nospecial) out.nospecial = true;
    if (c.ml && c.text === '' && c.pair === '') continue; // nothing to truncate
    if (c.file_trunc) out.file_trunc = true;
    out.src = c.src;
    Object.assign(out, { ids: r.ids, types: r.types, offsets: r.offsets, special: r.special, seq: r.seq });
    if (r.untrunc !== undefined) out.untrunc = r.untrunc;
    // A max_length below the template's specials underflows in the
    // reference; the C refuses it (BERT_E_INVALID), so no line uses it.
    if (c.ml && !c.nospecial && [...r.special].filter((x) => x === '1').length > c.ml) continue;
    // The binding's strings end at a NUL, so decodes of such text are unseen.
    const hasNul = (c.text + (c.pair ?? '')).includes('\0');
    if (!hasNul && (c.src === 'hard' || c.src === 'custom' || i % 7 === 0)) {
      out.dec_rust = await rust.decode(r.ids, false);
      out.dec_rust_skip = await rust.decode(r.ids, true);
      // Without transformers.js: transformers' decode is `tokenizers`' then
      // clean_up_tokenization when the checkpoint keeps its default (true).
      const rustDecode = (skip) => (skip ? out.dec_rust_skip : out.dec_rust);
      const tjsDecode = (skip) => (tjs ? tjs.decode(r.ids, { skip_special_tokens: skip })
        : spec.cleanup ? cleanUp(rustDecode(skip)) : rustDecode(skip));
      out.dec = tjsDecode(false);
      out.dec_skip = tjsDecode(true);
    }
    if (tjs && !c.ml && !c.file_trunc && !c.nospecial) {
      const e = tjs(c.text, { text_pair: c.pair ?? null, add_special_tokens: true, return_token_type_ids: true });
      const ids = Array.from(e.input_ids.data, Number);
      const types = Array.from(e.token_type_ids.data, Number).join('');
      if (ids.join(',') !== r.ids.join(',') || types !== r.types) {
        out.tjs_ids = ids;
        out.tjs_reason = explain(c.text, c.pair, singleWords);
        counts.tjsDepart[out.tjs_reason] = (counts.tjsDepart[out.tjs_reason] || 0) + 1;
      }
    }
    counts.lines++;
    if (c.pair != null) counts.pairs++;
    if (r.untrunc !== undefined && r.untrunc > r.ids.length) counts.truncated++;
    lines.push(JSON.stringify(out));
  }
  fs.writeFileSync(path.join(OUT, spec.name + '.jsonl'), lines.join('\n') + '\n');
  const at = summary.findIndex((e) => e.name === spec.name);
  if (at >= 0) summary[at] = { name: spec.name, ...counts };
  else summary.push({ name: spec.name, ...counts });
  console.error(spec.name, JSON.stringify(counts));
}

// llama.cpp's bge vectors (ids without [CLS]/[SEP]) against the reference.
if (!only.length) {
  for (const f of ['ggml-vocab-bert-bge.gguf.inp', 'ggml-vocab-bert-bge.gguf.out'])
  {
    fs.copyFileSync(path.join(SHARED, 'tokenizer-test-vectors', f), path.join(OUT, f));
    fs.chmodSync(path.join(OUT, f), 0o644);
  }
  // Each input is followed by a separator line; each output is one line.
  const inputs = fs.readFileSync(path.join(OUT, 'ggml-vocab-bert-bge.gguf.inp'), 'utf8').split('\n__ggml_vocab_test__\n').slice(0, -1);
  const expected = fs.readFileSync(path.join(OUT, 'ggml-vocab-bert-bge.gguf.out'), 'utf8').split('\n').slice(0, -1);
  const rust = tk.Tokenizer.fromFile(path.join(OUT, 'minilm/tokenizer.json'));
  rust.disablePadding();
  rust.disableTruncation();
  let same = 0;
  for (let i = 0; i < inputs.length; i++) {
    const e = await rust.encode(inputs[i], null, { addSpecialTokens: false });
    if (e.getIds().join(' ') === expected[i].trim()) same++;
    else console.error('bge vector', i, JSON.stringify(inputs[i]), e.getIds().join(' '), '!=', expected[i]);
  }
  console.error(`bge vectors: ${same}/${inputs.length} equal to the reference`);
}
fs.rmSync(tmpRoot, { recursive: true, force: true });
fs.writeFileSync(summaryPath, JSON.stringify(summary, null, 1) + '\n');
