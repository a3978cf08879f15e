"""Fine-tuning a BERT relevance classifier on query–document judgments (as Nogueira & Cho, and Birch).

Input is `[CLS] query [SEP] title text [SEP]` with a two-way softmax head and cross-entropy loss. A
bi-encoder (head `bi_encoder`) trains on the same pairs as a two-way classifier of its cosine, query
and text encoded apart (models.CosineClassifier), and is saved as a bi-encoder again.
A training *source* is one collection's files: docs.jsonl ({"id","title","text"}), topics.tsv,
qrels and a first-stage TREC run. Positives are the judged-relevant documents of each training
query; negatives are drawn (seeded, per query) from that query's top run candidates, never a
judged-relevant document.

`run.train()` fine-tunes on one source (or a mix of several) and writes an HF checkpoint with
`reranker.json` (what it was trained on, how, checksums, fingerprint), `train_log.jsonl` and
`loss.png`. `run.train_chain()` fine-tunes on several sources in turn (A, then B from A's weights),
keeping each stage. A complete checkpoint whose inputs and hyper-parameters match is reused.

Modules, each importing only those above it: `settings` (TrainingConfig, Source),
`pairs` (training pairs of a source), `encoding` (tokenised pairs, batches), `pretraining` (masked-LM and
next-sentence sources and losses, over `pairs` and `encoding`), `validation` (held-out
loss and MRR), `teacher` (distillation, soft labels, a filter's best units), `heads` (a head's start),
`resume` (reuse, resume state, determinism), `tasks` (a task's model, data and loss), `loop` (the
training loop), `loss_plot` (loss.png), `run` (train, train_chain). Nothing is imported here: the
package's modules are imported by their full name.
"""
