"""Data checks over the stores, as plain functions returning CheckOutcome (the assets layer wraps them)."""
