"""Reading saved runs against each other: compare, history, fleet health."""
