"""The event model (`model`) and its codecs: Avro binary, single-object and container
files (`avro`), the JSON Lines form (`jsonl`), and file reading with rejects (`files`)."""
