// Package model2vec is the builtin embedder: a pure-Go runtime for static
// embedding models in the Model2Vec format, such as minishlab's potion
// models (potion-base-8M: a BERT vocabulary × 256 dims).
//
// # The model's directory
//
//	config.json        the model's settings; model_name, if there, names it
//	                   (else the directory's name does)
//	tokenizer.json     a Hugging Face tokenizer
//	model.safetensors  the tensors: embeddings (rows × dims), and optionally
//	                   weights (one per token id) and mapping (token id → row,
//	                   for a quantized vocabulary)
//
// A safetensors file is an 8-byte little-endian header length n, n bytes of
// JSON (an object: for each tensor its dtype, shape and [begin, end)
// offsets within the data section; an optional __metadata__ entry), then
// the data section. Load checks the header length against the file's real
// size and a cap before reading it, each tensor's offsets against the data
// section, and its shape × dtype size against its offsets, so a corrupt
// or hostile file cannot make it allocate what it announces. As in
// Model2Vec, the matrix has a row per token id unless a mapping says which
// row each token takes. Embeddings and weights may be F32, F16 or F64
// (converted to float32 at load), a mapping I64 or I32; NaN and infinities
// are refused. Caps: model.safetensors 2 GiB, its header 1 MiB,
// tokenizer.json 128 MiB, config.json 64 KiB, 4M tokens, 4096 dims.
//
// # Embedding a text
//
// As Model2Vec's StaticModel.encode does: cut the text to 512 × the
// vocabulary's median token length in characters, tokenize it without
// special tokens ([CLS], [SEP]), drop the unknown token's ids (so an
// unknown word adds nothing), keep the first 512 tokens, take each token's
// row (through the mapping if any, scaled by its weight if any), average,
// L2-normalise. A text with no known token gets the zero vector. Vectors
// are always normalised, whatever config.json's normalize says, since
// embed.Embedder promises unit vectors; the direction is the same.
//
// # The tokenizer
//
// The potion models' tokenizer is BERT's: the BertNormalizer (drop
// controls, whitespace to spaces, CJK ideographs spaced out, accents
// stripped by NFD, lowercase), the BertPreTokenizer (split on whitespace
// and punctuation) and WordPiece (greedy longest match, "##" continuation
// pieces, a word with no match is [UNK] whole), after the added tokens
// (the special ones such as [CLS] as written, the multiword ones Model2Vec
// adds in the normalized text) are found. That subset is implemented here
// from tokenizer.json's fields; other models (BPE, Unigram), normalizers
// and pre-tokenizers are refused by name. Its ids are those of the
// tokenizers library itself on hard texts (testdata/reference.json, made
// by testdata/reference.mjs through the library's Node binding).
//
// github.com/sugarme/tokenizer v0.3.0, which loads tokenizer.json, was
// tried on the same tiny model and not chosen: it tokenized "Café" as
// [UNK] where the tokenizers library strips the accent (strip_accents null
// means "as lowercase"), took 1.26 ms to tokenize a text of 300 bytes
// (the mean of 2,000 in a loop) on this machine (this package's whole embedding takes 26–64 µs, see
// below), and added 4.8 MB to a binary (7.7 MB against 2.9 MB), with a
// progress bar and terminal colours among its dependencies.
//
// # Speed
//
// On 2 shared, loaded cores (AMD EPYC), with go test -bench . -benchtime 3s:
// BenchmarkEmbed (a 300-byte text, 30k tokens × 256 dims) 44–64 µs, 3
// allocations (1.4 kB) per text; BenchmarkEmbedProse (270 bytes of English,
// BERT's vocabulary) 26–42 µs; BenchmarkLoad (30k × 256, F32) 125 ms. Half
// of an embedding is adding up its tokens' rows, the rest tokenizing.
//
// # Sources
//
//   - Model2Vec's StaticModel (tokenize, encode, the unknown token, weights
//     and mapping): https://github.com/MinishLab/model2vec/blob/main/model2vec/model.py
//     and its persistence.py (the tensors' names)
//   - the safetensors format: https://github.com/huggingface/safetensors#format
//   - the BERT normalizer, pre-tokenizer and WordPiece of the tokenizers
//     library: https://github.com/huggingface/tokenizers/tree/main/tokenizers/src
//     (normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece)
package model2vec
