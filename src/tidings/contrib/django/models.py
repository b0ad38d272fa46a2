"""No models: tidings keeps its data in its own database (tidings.contrib.django.conf). The
module exists so that Django sends this app ``post_migrate``, which migrates that database."""
