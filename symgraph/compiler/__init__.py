"""The bind-time compiler."""
