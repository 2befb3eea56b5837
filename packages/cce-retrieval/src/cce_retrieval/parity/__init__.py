"""What byte-identity with the reference engine needs.

Rust string rules, number and float layout, the word tokenizer.
"""
