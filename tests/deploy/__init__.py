"""The deployment across hosts: network namespaces joined by veth links (`make deploy-test`)."""
