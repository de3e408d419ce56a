"""RDF vocabulary, per-document named graphs and the quad store."""
