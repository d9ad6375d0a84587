"""What gunicorn's master process loads (gunicorn.conf.py): the JSON access log and the upkeep of the
metric files. Nothing here imports the app, so no app code is loaded before the workers fork and every new
worker imports the deployment's code afresh."""
