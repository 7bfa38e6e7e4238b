"""Explanations of the algebra's refusals, with repairs that are proven before they are offered."""
