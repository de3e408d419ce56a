"""Reading a Markdown vault: files, front matter, links, chunks, hashes and buckets."""
