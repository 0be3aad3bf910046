"""Typed jobs: frozen dataclasses of resolved parameters, built from the config by one pure
function per paper (``minip.minip_jobs``, ``entropic.entropic_jobs``) that holds every cross-key
check. The workflow only looks jobs up (through ``attnrank.plan``) and passes ``job.to_json()``;
the CLI parses ``Job.from_json``. Standard library only: the workflow imports this package while
it parses the Snakefile. (Deliberately empty: a step's code hash covers only the job modules
it imports.)"""
