read -r n budget
read -r -a a
best=0
total=0
left=0
for ((right = 0; right < n; right++)); do
    ((total += a[right]))
    while ((total > budget)); do
        ((total -= a[left++]))
    done
    ((right - left + 1 > best && (best = right - left + 1)))
done
echo "$best"
