"""Delivery beyond the inbox: preferences per category and channel, email, webhooks."""
