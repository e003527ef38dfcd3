"""csc_hf: Chinese Spelling Check evaluation and analysis on the Hugging Face stack."""

__version__ = "0.1.0"
