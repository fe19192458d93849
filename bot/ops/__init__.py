"""Operating OwliaBot: security audit, doctor, safe fixes, systemd units and the compose setup."""
