"""Real AWS event shapes (from the AWS documentation's sample events) shared by the runtime tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# Shapes copied from the AWS documentation's sample events (ids and accounts are the documented examples).
SCHEDULED_EVENT: dict[str, Any] = json.loads((Path(__file__).parent / "scheduled-event.json").read_text())
"""EventBridge's scheduled event (also read by the benchmark's children, which import nothing of the tests)."""

FUNCTION_URL_EVENT: dict[str, Any] = {
    "version": "2.0",
    "routeKey": "$default",
    "rawPath": "/",
    "rawQueryString": "",
    "headers": {
        "x-amzn-tls-cipher-suite": "ECDHE-RSA-AES128-GCM-SHA256",
        "x-amzn-tls-version": "TLSv1.2",
        "x-amzn-trace-id": "Root=1-5e723db7-9d4b1b4a6d0e4a0c5e3a2b1c",
        "x-forwarded-proto": "https",
        "host": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-west-2.on.aws",
        "x-forwarded-port": "443",
        "x-forwarded-for": "123.123.123.123",
        "accept": "*/*",
        "user-agent": "curl/8.5.0",
    },
    "requestContext": {
        "accountId": "123456789012",
        "apiId": "abcdefghijklmnopqrstuvwxyz012345",
        "authorizer": {
            "iam": {
                "accessKey": "AKIA000000000EXAMPLE",
                "accountId": "111122223333",
                "callerId": "AIDA000000000EXAMPLE",
                "cognitoIdentity": None,
                "principalOrgId": None,
                "userArn": "arn:aws:iam::111122223333:user/example-user",
                "userId": "AIDA000000000EXAMPLE",
            }
        },
        "domainName": "abcdefghijklmnopqrstuvwxyz012345.lambda-url.us-west-2.on.aws",
        "domainPrefix": "abcdefghijklmnopqrstuvwxyz012345",
        "http": {
            "method": "GET",
            "path": "/",
            "protocol": "HTTP/1.1",
            "sourceIp": "123.123.123.123",
            "userAgent": "curl/8.5.0",
        },
        "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        "routeKey": "$default",
        "stage": "$default",
        "time": "12/Mar/2020:19:03:58 +0000",
        "timeEpoch": 1583348638390,
    },
    "isBase64Encoded": False,
}

REST_V1_EVENT: dict[str, Any] = {
    "resource": "/",
    "path": "/",
    "httpMethod": "GET",
    "headers": {"Accept": "*/*", "Host": "1234567890.execute-api.us-east-1.amazonaws.com"},
    "multiValueHeaders": {"Accept": ["*/*"], "Host": ["1234567890.execute-api.us-east-1.amazonaws.com"]},
    "queryStringParameters": None,
    "multiValueQueryStringParameters": None,
    "pathParameters": None,
    "stageVariables": None,
    "requestContext": {
        "accountId": "123456789012",
        "apiId": "1234567890",
        "httpMethod": "GET",
        "path": "/prod/",
        "protocol": "HTTP/1.1",
        "requestId": "c6af9ac6-7b61-11e6-9a41-93e8deadbeef",
        "resourcePath": "/",
        "stage": "prod",
    },
    "body": None,
    "isBase64Encoded": False,
}
