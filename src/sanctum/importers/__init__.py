"""Other trainers' logs written as event logs."""
