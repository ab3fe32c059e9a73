"""Authentication adapters: scrypt password hashes and HMAC-signed bearer and webhook tokens."""
