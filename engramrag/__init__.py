"""EngramRAG: a document-grounded ontology memory for long-running human–AI work.

This package is the domain core. It is plain Python and never imports dagster or streamlit;
orchestration lives in ``assets/`` and ``pipelines/``, the review app in ``dashboards/``.
"""

__version__ = "0.1.0"
