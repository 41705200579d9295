"""lossless-lab controller: SONiC config_db.json to P4Runtime."""
