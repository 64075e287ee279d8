"""Serverless runtime adapters: AWS Lambda (`aws_lambda`) and Google Cloud Functions (`gcf`).

Both parse their invocation at the edge (`events`), run one check through `outpost.runner`, and map the
result the same way (`common`): ok/degraded succeed, failed/error end the invocation as failed.
"""
