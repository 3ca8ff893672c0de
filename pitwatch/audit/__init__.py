"""The embedded audit: files in, the engine in process, chDB as the store."""
