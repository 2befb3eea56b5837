"""Before against after: pairing two reports by case and the pass/fail gate."""
