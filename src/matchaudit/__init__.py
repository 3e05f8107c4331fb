"""matchaudit."""
