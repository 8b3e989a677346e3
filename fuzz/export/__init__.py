"""What a campaign hands out: repro scripts, plain-torch repros, reports, the dashboard."""
