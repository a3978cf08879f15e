# The reranking middle: every paper's segment and score jobs (its plugin's stage_jobs), one rule each, written
# here once. A paper asks for the files it segments and scores, and names its own command; aggregation and
# fusion stay with the paper, since each reads its scores its own way.


for stage_plugin in EXP.plugins.values():
    for job in stage_plugin.stage_jobs():

        rule:
            name:
                job.rule
            input:
                **job.inputs,
            output:
                **job.outputs,
            log:
                pattern("log", stage=job.stage, name=job.name),
            benchmark:
                pattern("benchmark", stage=job.stage, name=job.name)
            priority: job.priority
            conda:
                ENV
            threads: job.threads
            resources:
                gpu=job.gpus,
            params:
                **job.params,
                config=CONFIG_FILE,
            shell:
                looped_shell(locals().get("rule"), f"python -m reranker {job.command} 2> {{log}}")
